# call b: the variants probe (base / the tree's 03 and 06, launch shapes, QuACK's cubin), then kernels_cuda's GPU tests at the tree
R=$OUT/b; mkdir -p $R; D=measurements/2026-11-27-h100/row-base
git log -1 --format="tree %h (+ the working tree's changes)" > $R/b-env.txt 2>/dev/null; git status --short >> $R/b-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/b-env.txt
timeout 400 python3 scripts/in_place.py python $D/probes/variants.py > $R/b-variants.log 2>&1; echo "probe rc=$?" >> $R/b-env.txt
timeout 150 scripts/test-in-place tests/kernels_cuda -m gpu -q -p no:cacheprovider -rfE > $R/b-tests-cuda.log 2>&1; echo "tests rc=$?" >> $R/b-env.txt
cat $R/b-env.txt; tail -3 $R/b-tests-cuda.log; grep -v "^checking" $R/b-variants.log | tail -150
cd $OUT && tar czf b.tgz b && rm -rf b
