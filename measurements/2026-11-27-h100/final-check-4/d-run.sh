# call d (carries the first part of the peers' wheels): every GPU test at the final tree
R=$OUT/d; mkdir -p $R; mkdir -p ~/peers; cp .whl/p1/* ~/peers/
git log --oneline -1 > $R/d-env.txt; git status --short >> $R/d-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/d-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/d-env.txt
start=$(date +%s); timeout 540 scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/d-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/d-stages.txt
cat $R/d-stages.txt; tail -2 $R/d-tests-gpu.log; grep -E "FAILED|ERROR" $R/d-tests-gpu.log | head
cd $OUT && tar czf d.tgz d && rm -rf d
