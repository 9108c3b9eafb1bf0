# call c (carries the second part of the peers' wheels): every GPU test at the final tree
R=$OUT/c; mkdir -p $R; cp .whl/p2/* ~/peers/
git log --oneline -1 > $R/c-env.txt; git status --short >> $R/c-env.txt
start=$(date +%s); timeout 540 scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/c-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/c-stages.txt
cat $R/c-stages.txt; tail -2 $R/c-tests-gpu.log; grep -E "FAILED|ERROR" $R/c-tests-gpu.log | head
cd $OUT && tar czf c.tgz c && rm -rf c
