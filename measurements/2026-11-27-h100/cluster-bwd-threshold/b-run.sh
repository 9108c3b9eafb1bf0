# call b: the backward takes the cluster kernel at any row count (cluster.MIN_BYTES removed): GPU tests of kernels_triton and minigpt_torch; lab bench of kernels_triton's backward at launches that were below MIN_BYTES
R=$OUT/b; mkdir -p $R
git log --oneline -1 > $R/b-env.txt; git status --short >> $R/b-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/b-env.txt
start=$(date +%s); timeout 330 scripts/test-in-place tests/kernels_triton tests/minigpt_torch -m gpu -q -p no:cacheprovider -rfE > $R/b-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/b-stages.txt
timeout 60 python3 scripts/in_place.py lab bench softmax_backward --impls triton.softmax_backward,cuda.softmax_backward --shapes 1x131072,16x131072,8x128257,32x65536 --time-cap 0.3 --json $R/b-bench-bwd.json > $R/b-bench-bwd.log 2>&1; echo "bench rc=$? $(date +%T)" >> $R/b-stages.txt
cat $R/b-stages.txt; tail -1 $R/b-tests-gpu.log; grep -E "FAILED|ERROR" $R/b-tests-gpu.log | head -8; tail -25 $R/b-bench-bwd.log
cd $OUT && tar czf b.tgz b && rm -rf b
