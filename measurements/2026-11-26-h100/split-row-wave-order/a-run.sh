# call a: the split-row forward's wave order (probes/wave_order.py): the package's kernel, a copy, the next chunk's load after the publish, the merge as one reduction of pairs, both
R=$OUT/a; mkdir -p $R; D=$PWD/measurements/2026-11-26-h100/split-row-wave-order
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/a-env.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/a-env.txt
timeout 420 python3 scripts/in_place.py python $D/probes/wave_order.py > $R/a-wave-order.log 2>&1; echo "probe rc=$?" >> $R/a-stages.txt
cat $R/a-stages.txt; grep -v Warning $R/a-wave-order.log | tail -12
cd $OUT && tar czf a.tgz a && rm -rf a
