# call j (carries the first part of the peers' wheels): every GPU test at the final tree
R=$OUT/j; mkdir -p $R; mkdir -p ~/peers; cp .whl/p1/* ~/peers/
git log --oneline -1 > $R/j-env.txt; git status --short >> $R/j-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/j-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/j-env.txt
start=$(date +%s); timeout 540 scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/j-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/j-stages.txt
cat $R/j-stages.txt; tail -2 $R/j-tests-gpu.log; grep -E "FAILED|ERROR" $R/j-tests-gpu.log | head
