# call f: the forward over clusters at any row count in every dtype, fp32 rows to 262144 in 16384-element blocks of 8 warps (working tree) against HEAD (.ab/old): kernels_triton's cluster, softmax, split-row and accuracy GPU tests; lab bench softmax in turns, two rounds
R=$OUT/f; mkdir -p $R; D=measurements/2026-11-27-h100/cluster-reread
git log --oneline -1 > $R/f-env.txt; git status --short >> $R/f-env.txt
start=$(date +%s); timeout 200 scripts/test-in-place tests/kernels_triton/test_cluster.py tests/kernels_triton/test_triton_softmax.py tests/kernels_triton/test_triton_accuracy.py tests/kernels_triton/test_split_row.py -m gpu -q -p no:cacheprovider -rfE > $R/f-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/f-stages.txt
S=1024x131072,2048x65536,512x65536,4096x32768,256x131072,1024x32768,128x32768,512x50257,2048x50257,256x262144,64x150000,512x200000,65536x600
for r in 1 2; do
  for v in old new; do
    if [ $v = new ]; then P=scripts/in_place.py; else P=.ab/$v/scripts/in_place.py; fi
    timeout 100 python3 $P lab bench softmax --impls triton.softmax --shapes $S --dtypes float32,bfloat16 --time-cap 0.3 --json $R/f-ab-$v-fwd-$r.json > $R/f-ab-$v-fwd-$r.log 2>&1
    echo "ab $v $r rc=$? $(date +%T)" >> $R/f-stages.txt
  done
done
python3 $D/probes/ab_trees.py $R f old new > $R/f-ab-summary.txt 2>&1
cat $R/f-stages.txt; tail -1 $R/f-tests.log; grep -E "FAILED|ERROR" $R/f-tests.log | head -8; cat $R/f-ab-summary.txt
cd $OUT && tar czf f.tgz f && rm -rf f
