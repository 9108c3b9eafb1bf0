# call b (carries the first part of the peers' wheels): every GPU test at the final tree
R=$OUT/b; mkdir -p $R; mkdir -p ~/peers; cp .whl/p1/* ~/peers/
git log --oneline -1 > $R/b-env.txt; git status --short >> $R/b-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/b-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/b-env.txt
start=$(date +%s); timeout 540 scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/b-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/b-stages.txt
cat $R/b-stages.txt; tail -2 $R/b-tests-gpu.log; grep -E "FAILED|ERROR" $R/b-tests-gpu.log | head
cd $OUT && tar czf b.tgz b && rm -rf b
