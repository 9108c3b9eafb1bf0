# call l (carries the first part of the peers' wheels): every GPU test at the final tree
R=$OUT/l; mkdir -p $R; mkdir -p ~/peers; cp .whl/p1/* ~/peers/
git log --oneline -1 > $R/l-env.txt; git status --short >> $R/l-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/l-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/l-env.txt
start=$(date +%s); timeout 540 scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/l-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/l-stages.txt
cat $R/l-stages.txt; tail -2 $R/l-tests-gpu.log; grep -E "FAILED|ERROR" $R/l-tests-gpu.log | head
cd $OUT && tar czf l.tgz l && rm -rf l
