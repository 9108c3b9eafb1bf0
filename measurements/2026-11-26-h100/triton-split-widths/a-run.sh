# call a: kernels_triton's dispatch against the split-row kernels over fewer, wider programs a row, at 4096x32768 and 1024x131072 (probes/split_widths.py)
R=$OUT/a; mkdir -p $R; D=$PWD/measurements/2026-11-26-h100/triton-split-widths
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/a-env.txt
python3 -c "import torch, triton, cupy; print(torch.__version__, triton.__version__, cupy.__version__)" >> $R/a-env.txt
timeout 400 python3 scripts/in_place.py python $D/probes/split_widths.py > $R/a-split-widths.log 2>&1; echo "probe rc=$?" >> $R/a-stages.txt
cat $R/a-stages.txt $R/a-split-widths.log
cd $OUT && tar czf a.tgz a && rm -rf a
