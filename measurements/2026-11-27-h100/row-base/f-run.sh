# call f: as call d, with the few-rows launches' leading packs unchecked (FULL: packs 0..FULL-1 of every thread inside the row);, then the variants probe --ab (the package before and after, in turns)
R=$OUT/f; mkdir -p $R; D=measurements/2026-11-27-h100/row-base
git log -1 --format="tree %h" > $R/f-env.txt 2>/dev/null; git status --short >> $R/f-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/f-env.txt
start=$(date +%s); timeout 200 scripts/test-in-place tests/kernels_cuda -m gpu -q -p no:cacheprovider -rfE > $R/f-tests-cuda.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/f-env.txt
timeout 330 python3 scripts/in_place.py python $D/probes/variants.py --ab > $R/f-ab.log 2>&1; echo "probe rc=$?" >> $R/f-env.txt
cat $R/f-env.txt; tail -3 $R/f-tests-cuda.log; grep -E "FAILED|ERROR" $R/f-tests-cuda.log | head; grep -v "^checking" $R/f-ab.log | tail -150
cd $OUT && tar czf f.tgz f && rm -rf f
