# call h: kernels_cuda's GPU tests with the backward loading y's packs then dy's and a pairwise dot; the variants probe --bwd2 (that backward against caf2ee4's)
R=$OUT/h; mkdir -p $R; D=measurements/2026-11-27-h100/row-base
git log -1 --format="tree %h" > $R/h-env.txt 2>/dev/null; git status --short >> $R/h-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/h-env.txt
start=$(date +%s); timeout 200 scripts/test-in-place tests/kernels_cuda -m gpu -q -p no:cacheprovider -rfE > $R/h-tests-cuda.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/h-env.txt
timeout 330 python3 scripts/in_place.py python $D/probes/variants.py --bwd2 > $R/h-bwd2.log 2>&1; echo "probe rc=$?" >> $R/h-env.txt
cat $R/h-env.txt; tail -3 $R/h-tests-cuda.log; grep -E "FAILED|ERROR" $R/h-tests-cuda.log | head; grep -v "^checking" $R/h-bwd2.log | tail -150
cd $OUT && tar czf h.tgz h && rm -rf h
