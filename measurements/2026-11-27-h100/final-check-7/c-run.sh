# call c (tree 7d0db8d; carries the first part of the peers' wheels): every GPU test
R=$OUT/c; mkdir -p $R; mkdir -p ~/peers; cp .whl/p1/* ~/peers/
echo "tree 7d0db8d" > $R/c-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/c-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/c-env.txt
start=$(date +%s); timeout 540 scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/c-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/c-stages.txt
cat $R/c-stages.txt; tail -2 $R/c-tests-gpu.log; grep -E "FAILED|ERROR" $R/c-tests-gpu.log | head
cd $OUT && tar czf c.tgz c && rm -rf c
