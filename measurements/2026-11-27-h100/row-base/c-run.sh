# call c: kernels_cuda's GPU tests at the tree (one address a row, predicated stores, the few-rows rule), then the variants probe --ab (the package before and after, in turns)
R=$OUT/c; mkdir -p $R; D=measurements/2026-11-27-h100/row-base
git log -1 --format="tree %h" > $R/c-env.txt 2>/dev/null; git status --short >> $R/c-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/c-env.txt
start=$(date +%s); timeout 200 scripts/test-in-place tests/kernels_cuda -m gpu -q -p no:cacheprovider -rfE > $R/c-tests-cuda.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/c-env.txt
timeout 330 python3 scripts/in_place.py python $D/probes/variants.py --ab > $R/c-ab.log 2>&1; echo "probe rc=$?" >> $R/c-env.txt
cat $R/c-env.txt; tail -3 $R/c-tests-cuda.log; grep -E "FAILED|ERROR" $R/c-tests-cuda.log | head; grep -v "^checking" $R/c-ab.log | tail -150
cd $OUT && tar czf c.tgz c && rm -rf c
