# call t: kernels_triton's cluster GPU tests at the final tree (package code of 45057cc; the forward's error test bounded by torch's error plus an ulp, as its docstring said)
R=$OUT/t; mkdir -p $R
git log --oneline -1 > $R/t-env.txt; git status --short >> $R/t-env.txt
start=$(date +%s); timeout 90 scripts/test-in-place tests/kernels_triton/test_cluster.py -m gpu -q -p no:cacheprovider -rfE > $R/t-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/t-stages.txt
cat $R/t-stages.txt; tail -2 $R/t-tests.log
cd $OUT && tar czf t.tgz t && rm -rf t
