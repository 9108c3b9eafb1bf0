# call k (tree f2471bb; carries the first part of the peers' wheels): every GPU test
R=$OUT/k; mkdir -p $R; mkdir -p ~/peers; cp .whl/p1/* ~/peers/
echo "tree f2471bb" > $R/k-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/k-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/k-env.txt
start=$(date +%s); timeout 540 scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/k-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/k-stages.txt
cat $R/k-stages.txt; tail -2 $R/k-tests-gpu.log; grep -E "FAILED|ERROR" $R/k-tests-gpu.log | head
cd $OUT && tar czf k.tgz k && rm -rf k
