# call f: after cluster.MIN_BYTES (launches under 16 MiB stay on the other kernels) and cluster.backward for the tests: kernels_triton's GPU tests; lab bench softmax_backward (device and call time) at the shapes near the threshold
R=$OUT/f; mkdir -p $R
git log --oneline -1 > $R/f-env.txt; git status --short >> $R/f-env.txt
start=$(date +%s); scripts/test-in-place tests/kernels_triton -m gpu -q -p no:cacheprovider -rfE > $R/f-tests-triton-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/f-stages.txt
timeout 100 python3 scripts/in_place.py lab bench softmax_backward --impls triton.softmax_backward --shapes 16x131072,8x128257,64x50257,4096x32768 --dtypes float32,bfloat16 --time-cap 0.3 --json $R/f-bench-bwd.json > $R/f-bench-bwd.log 2>&1; echo "bench rc=$?" >> $R/f-stages.txt
cat $R/f-stages.txt; tail -2 $R/f-tests-triton-gpu.log; grep -E "FAILED|ERROR" $R/f-tests-triton-gpu.log | head
cd $OUT && tar czf f.tgz f && rm -rf f
