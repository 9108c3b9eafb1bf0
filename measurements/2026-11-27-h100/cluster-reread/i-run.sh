# call i: both directions over clusters to 262144 columns, 16384-element blocks of 8 warps past 131072 with registers capped (80 forward, 128 backward; working tree) against HEAD (.ab/old): kernels_triton's cluster, softmax, split-row and accuracy GPU tests; lab bench in turns, two rounds
R=$OUT/i; mkdir -p $R; D=measurements/2026-11-27-h100/cluster-reread
git log --oneline -1 > $R/i-env.txt; git status --short >> $R/i-env.txt
start=$(date +%s); timeout 220 scripts/test-in-place tests/kernels_triton/test_cluster.py tests/kernels_triton/test_triton_softmax.py tests/kernels_triton/test_triton_accuracy.py tests/kernels_triton/test_split_row.py -m gpu -q -p no:cacheprovider -rfE > $R/i-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/i-stages.txt
F=256x262144,512x200000,64x262144,16x262144,64x150000,1024x131072
B=256x262144,512x200000,64x262144,64x150000,1024x131072
for r in 1 2; do
  for v in old new; do
    if [ $v = new ]; then P=scripts/in_place.py; else P=.ab/$v/scripts/in_place.py; fi
    timeout 80 python3 $P lab bench softmax --impls triton.softmax --shapes $F --dtypes float32,bfloat16 --time-cap 0.3 --json $R/i-ab-$v-fwd-$r.json > $R/i-ab-$v-fwd-$r.log 2>&1
    timeout 80 python3 $P lab bench softmax_backward --impls triton.softmax_backward --shapes $B --dtypes float32,bfloat16 --time-cap 0.3 --json $R/i-ab-$v-bwd-$r.json > $R/i-ab-$v-bwd-$r.log 2>&1
    echo "ab $v $r rc=$? $(date +%T)" >> $R/i-stages.txt
  done
done
python3 $D/probes/ab_trees.py $R i old new > $R/i-ab-summary.txt 2>&1
cat $R/i-stages.txt; tail -1 $R/i-tests.log; grep -E "FAILED|ERROR" $R/i-tests.log | head -8; cat $R/i-ab-summary.txt
cd $OUT && tar czf i.tgz i && rm -rf i
