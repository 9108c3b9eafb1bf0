# call i: the dispatch tests as fixed after call e (they spy on cluster.takes' answer; call e's counted compiled_launch calls, which the dispatch makes twice): the cluster tests and the committed-picks test
R=$OUT/i; mkdir -p $R
git log --oneline -1 > $R/i-env.txt; git status --short >> $R/i-env.txt
start=$(date +%s); timeout 300 scripts/test-in-place tests/kernels_triton/test_cluster.py tests/kernels_triton/test_triton_softmax.py tests/kernels_triton/test_triton_accuracy.py -m gpu -q -p no:cacheprovider -rfE > $R/i-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/i-stages.txt
cat $R/i-stages.txt; tail -2 $R/i-tests-gpu.log; grep -E "FAILED|ERROR" $R/i-tests-gpu.log | head
cd $OUT && tar czf i.tgz i && rm -rf i
