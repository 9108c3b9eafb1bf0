# call n: the head/body/tail split in the cluster backward too, the forward's through the same helper (working tree) against HEAD (.ab/old): the cluster, softmax and accuracy GPU tests; lab bench softmax_backward and softmax at odd row lengths, old and new in turns, two rounds
R=$OUT/n; mkdir -p $R; D=measurements/2026-11-26-h100/triton-cluster-forward
git log --oneline -1 > $R/n-env.txt; git status --short >> $R/n-env.txt
start=$(date +%s); timeout 200 scripts/test-in-place tests/kernels_triton/test_cluster.py tests/kernels_triton/test_triton_softmax.py tests/kernels_triton/test_triton_accuracy.py -m gpu -q -p no:cacheprovider -rfE > $R/n-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/n-stages.txt
for r in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=.ab/old/scripts/in_place.py; else P=scripts/in_place.py; fi
    timeout 60 python3 $P lab bench softmax_backward --impls triton.softmax_backward --shapes 64x50257,512x50257,2048x50257,16x100003 --dtypes float32,bfloat16 --time-cap 0.3 --json $R/n-ab-$v-bwd-$r.json > $R/n-ab-$v-bwd-$r.log 2>&1
    timeout 40 python3 $P lab bench softmax --impls triton.softmax --shapes 64x50257,512x50257 --dtypes float32,bfloat16 --time-cap 0.3 --json $R/n-ab-$v-fwd-$r.json > $R/n-ab-$v-fwd-$r.log 2>&1
    echo "ab $v $r rc=$? $(date +%T)" >> $R/n-stages.txt
  done
done
python3 $D/probes/ab_summary.py $R n > $R/n-ab-summary.txt 2>&1
cat $R/n-stages.txt; tail -2 $R/n-tests-gpu.log; grep -E "FAILED|ERROR" $R/n-tests-gpu.log | head; cat $R/n-ab-summary.txt
cd $OUT && tar czf n.tgz n && rm -rf n
