# call v: after the review's mends (d681dc2 one compiled-kernel cache, 0de516c host_ids): GPU tests of kernels_triton, minigpt_torch, labtools; Triton call time and first call
R=$OUT/v; mkdir -p $R
git log --oneline -1 > $R/v-env.txt; git status --short >> $R/v-env.txt
scripts/test-in-place tests/kernels_triton tests/minigpt_torch tests/labtools -m gpu -q -p no:cacheprovider -rfE > $R/v-tests-gpu.log 2>&1; echo "tests rc=$?" >> $R/v-tests-gpu.log
timeout 150 python3 scripts/in_place.py python scripts/triton_host_overhead.py --json $R/v-calltime_triton.json > $R/v-calltime.log 2>&1; echo "calltime rc=$?" >> $R/v-calltime.log
tail -2 $R/v-tests-gpu.log; tail -1 $R/v-calltime.log
cd $OUT && tar czf v.tgz v && rm -rf v
