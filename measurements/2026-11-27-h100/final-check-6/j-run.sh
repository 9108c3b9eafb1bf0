# call j (a fresh machine; carries the first part of the peers' wheels): labtools' GPU tests after lab bench began timing the implementations of a point in turns
R=$OUT/j; mkdir -p $R; mkdir -p ~/peers; cp .whl/p1/* ~/peers/
git log --oneline -1 > $R/j-env.txt; git status --short >> $R/j-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/j-env.txt
start=$(date +%s); timeout 300 scripts/test-in-place tests/labtools -m gpu -q -p no:cacheprovider -rfE > $R/j-tests-labtools-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/j-stages.txt
cat $R/j-stages.txt; tail -2 $R/j-tests-labtools-gpu.log
cd $OUT && tar czf j.tgz j && rm -rf j
