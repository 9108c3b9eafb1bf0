# call j (carries the first part of the peers' wheels): kernels_cuda's GPU tests with the few-rows backward staged (STAGED); the package before and after in turns (row-base/probes/variants.py --ab)
R=$OUT/j; mkdir -p $R; mkdir -p ~/peers; cp .whl/p1/* ~/peers/
git log -1 --format="tree %h" > $R/j-env.txt; git status --short | grep -v "^??" >> $R/j-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/j-env.txt
start=$(date +%s); timeout 200 scripts/test-in-place tests/kernels_cuda -m gpu -q -p no:cacheprovider -rfE > $R/j-tests-cuda.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/j-env.txt
timeout 300 python3 scripts/in_place.py python measurements/2026-11-27-h100/row-base/probes/variants.py --ab > $R/j-ab.log 2>&1; echo "probe rc=$?" >> $R/j-env.txt
cat $R/j-env.txt; tail -1 $R/j-tests-cuda.log; grep -E "FAILED|ERROR" $R/j-tests-cuda.log | head; grep -v "^checking" $R/j-ab.log | grep -A6 "softmax_backward"
cd $OUT && tar czf j.tgz j && rm -rf j
