# call j: rows off 16-byte boundaries in the cluster forward (head, aligned body, tail; working tree) against HEAD (.ab/old): the cluster and accuracy GPU tests; lab bench softmax (device and call time) at odd and aligned row lengths, old and new in turns, two rounds
R=$OUT/j; mkdir -p $R; D=measurements/2026-11-26-h100/triton-cluster-forward
git log --oneline -1 > $R/j-env.txt; git status --short >> $R/j-env.txt
start=$(date +%s); timeout 200 scripts/test-in-place tests/kernels_triton/test_cluster.py tests/kernels_triton/test_triton_accuracy.py -m gpu -q -p no:cacheprovider -rfE > $R/j-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/j-stages.txt
S=4x50257,64x50257,512x50257,2048x50257,8x128257,16x100003,16x131072,2048x65536
for r in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=.ab/old/scripts/in_place.py; else P=scripts/in_place.py; fi
    timeout 100 python3 $P lab bench softmax --impls triton.softmax --shapes $S --dtypes float32,bfloat16 --time-cap 0.3 --json $R/j-ab-$v-fwd-$r.json > $R/j-ab-$v-fwd-$r.log 2>&1
    echo "ab $v fwd $r rc=$? $(date +%T)" >> $R/j-stages.txt
  done
done
python3 $D/probes/ab_summary.py $R j > $R/j-ab-summary.txt 2>&1
cat $R/j-stages.txt; tail -2 $R/j-tests-gpu.log; grep -E "FAILED|ERROR" $R/j-tests-gpu.log | head; cat $R/j-ab-summary.txt
cd $OUT && tar czf j.tgz j && rm -rf j
