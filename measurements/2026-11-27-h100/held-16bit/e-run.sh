# call e: the forward's thread max over groups of 8 first (one 16-byte load each), not one chain (working tree), against 71edc59 (.ab/old: packages and scripts): kernels_triton's cluster GPU tests; lab bench in turns, two rounds, few rows and a control of many, bf16 and fp32 (whose max is a tree too)
R=$OUT/e; mkdir -p $R; D=measurements/2026-11-27-h100/cluster-reread
git log --oneline -1 > $R/e-env.txt; git status --short >> $R/e-env.txt
start=$(date +%s); timeout 100 scripts/test-in-place tests/kernels_triton/test_cluster.py -m gpu -q -p no:cacheprovider -rfE > $R/e-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/e-stages.txt
F=16x131072,32x131072,16x65536,64x131072,1024x131072,256x262144
for r in 1 2; do
  for v in old new; do
    if [ $v = new ]; then P=scripts/in_place.py; else P=.ab/$v/scripts/in_place.py; fi
    timeout 50 python3 $P lab bench softmax --impls triton.softmax --shapes $F --dtypes bfloat16,float32 --time-cap 0.3 --json $R/e-ab-$v-fwd-$r.json > $R/e-ab-$v-fwd-$r.log 2>&1
    echo "ab $v $r rc=$? $(date +%T)" >> $R/e-stages.txt
  done
done
python3 $D/probes/ab_trees.py $R e old new > $R/e-ab-summary.txt 2>&1
cat $R/e-stages.txt; tail -1 $R/e-tests.log; grep -E "FAILED|ERROR" $R/e-tests.log | head -5; cat $R/e-ab-summary.txt
cd $OUT && tar czf e.tgz e && rm -rf e
