# call d: the cluster exchange by st.async into an mbarrier-counted inbox, two forms (v2: the inbox opened before the loads, in .ab/v2; new: opened after them, the working tree) against HEAD (.ab/old): test_cluster on both forms; lab bench of the cluster shapes, both directions, in turns, two rounds
R=$OUT/d; mkdir -p $R; D=measurements/2026-11-27-h100/cluster-reread
git log --oneline -1 > $R/d-env.txt; git status --short >> $R/d-env.txt
for v in v2 new; do
  if [ $v = new ]; then T=.; else T=.ab/$v; fi
  start=$(date +%s); timeout 120 $T/scripts/test-in-place tests/kernels_triton/test_cluster.py -m gpu -q -p no:cacheprovider -rfE -x > $R/d-tests-$v.log 2>&1; echo "tests $v rc=$? $(( $(date +%s) - start )) s" >> $R/d-stages.txt
done
F=1024x131072,2048x65536,4096x32768,512x50257,16x131072,64x50257,32x65536
B=1024x131072,2048x65536,4096x32768,64x50257,2048x50257
for r in 1 2; do
  for v in old v2 new; do
    if [ $v = new ]; then P=scripts/in_place.py; else P=.ab/$v/scripts/in_place.py; fi
    timeout 70 python3 $P lab bench softmax --impls triton.softmax --shapes $F --dtypes float32,bfloat16 --time-cap 0.3 --json $R/d-ab-$v-fwd-$r.json > $R/d-ab-$v-fwd-$r.log 2>&1
    timeout 70 python3 $P lab bench softmax_backward --impls triton.softmax_backward --shapes $B --dtypes float32,bfloat16 --time-cap 0.3 --json $R/d-ab-$v-bwd-$r.json > $R/d-ab-$v-bwd-$r.log 2>&1
    echo "ab $v $r rc=$? $(date +%T)" >> $R/d-stages.txt
  done
done
python3 $D/probes/ab_trees.py $R d old v2 new > $R/d-ab-summary.txt 2>&1
cat $R/d-stages.txt; for v in v2 new; do tail -1 $R/d-tests-$v.log; grep -E "FAILED|ERROR" $R/d-tests-$v.log | head -5; done; cat $R/d-ab-summary.txt
cd $OUT && tar czf d.tgz d && rm -rf d
