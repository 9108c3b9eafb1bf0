# call f (carries the first part of the peers' wheels): every GPU test at the final tree
R=$OUT/f; mkdir -p $R; mkdir -p ~/peers; cp .whl/p1/* ~/peers/
git log --oneline -1 > $R/f-env.txt; git status --short >> $R/f-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/f-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/f-env.txt
start=$(date +%s); timeout 540 scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/f-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/f-stages.txt
cat $R/f-stages.txt; tail -2 $R/f-tests-gpu.log; grep -E "FAILED|ERROR" $R/f-tests-gpu.log | head
cd $OUT && tar czf f.tgz f && rm -rf f
