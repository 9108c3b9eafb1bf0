# call a: v3 and 06 at rows of 600 by launch shape, under a write flush, a read flush and no flush of the L2 (probes/short_rows_l2.py)
R=$OUT/a; mkdir -p $R; D=$PWD/measurements/2026-11-26-h100/cuda-short-rows-l2
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/a-env.txt
python3 -c "import torch, triton, cupy; print(torch.__version__, triton.__version__, cupy.__version__)" >> $R/a-env.txt
timeout 400 python3 scripts/in_place.py python $D/probes/short_rows_l2.py > $R/a-short-rows-l2.log 2>&1; echo "probe rc=$?" >> $R/a-stages.txt
cat $R/a-stages.txt $R/a-short-rows-l2.log
cd $OUT && tar czf a.tgz a && rm -rf a
