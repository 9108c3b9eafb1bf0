# call d: as call c, with a tree (pairwise) max and sum over a thread's packs in 03 and 04's held chunks;, then the variants probe --ab (the package before and after, in turns)
R=$OUT/d; mkdir -p $R; D=measurements/2026-11-27-h100/row-base
git log -1 --format="tree %h" > $R/d-env.txt 2>/dev/null; git status --short >> $R/d-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/d-env.txt
start=$(date +%s); timeout 200 scripts/test-in-place tests/kernels_cuda -m gpu -q -p no:cacheprovider -rfE > $R/d-tests-cuda.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/d-env.txt
timeout 330 python3 scripts/in_place.py python $D/probes/variants.py --ab > $R/d-ab.log 2>&1; echo "probe rc=$?" >> $R/d-env.txt
cat $R/d-env.txt; tail -3 $R/d-tests-cuda.log; grep -E "FAILED|ERROR" $R/d-tests-cuda.log | head; grep -v "^checking" $R/d-ab.log | tail -150
cd $OUT && tar czf d.tgz d && rm -rf d
