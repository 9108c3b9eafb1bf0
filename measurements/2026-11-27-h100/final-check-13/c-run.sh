# call c (carries the third part of the peers' wheels): kernels_triton's GPU tests of test_triton_softmax.py again, after the mend of test_gpu_tune's filter (call a: it read another test's launch of N = 1000)
R=$OUT/c; mkdir -p $R; cp .whl/p3/* ~/peers/ && ls ~/peers > $R/c-peers.txt
start=$(date +%s); timeout 400 scripts/test-in-place tests/kernels_triton/test_triton_softmax.py -m gpu -q -p no:cacheprovider -rfE > $R/c-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/c-stages.txt
cat $R/c-stages.txt; tail -2 $R/c-tests.log; grep -E "FAILED|ERROR" $R/c-tests.log | head
cd $OUT && tar czf c.tgz c && rm -rf c
