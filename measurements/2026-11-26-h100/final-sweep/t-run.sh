# call t: every package's GPU tests at fbffdc0
R=$OUT/t; mkdir -p $R
git log --oneline -1 > $R/t-env.txt; git status --short >> $R/t-env.txt
scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/t-tests-gpu.log 2>&1; echo "tests rc=$?" >> $R/t-tests-gpu.log
tail -3 $R/t-tests-gpu.log
