# call o: the fp32 forward holds its exponentials only in one-wave launches of 8192-element blocks, with the factor exp(m - M) / S in fp64 (working tree), against HEAD 45057cc (.ab/old: every fp32 launch held them, the factor in fp32): kernels_triton's cluster/softmax/accuracy GPU tests; error against torch's over 40 fresh inputs a form, both trees; lab bench in turns, two rounds
R=$OUT/o; mkdir -p $R; A=measurements/2026-11-27-h100/cluster-reread/probes; D=measurements/2026-11-27-h100/held-exps
git log --oneline -1 > $R/o-env.txt; git status --short >> $R/o-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/o-env.txt
start=$(date +%s); timeout 250 scripts/test-in-place tests/kernels_triton/test_cluster.py tests/kernels_triton/test_triton_softmax.py tests/kernels_triton/test_triton_accuracy.py -m gpu -q -p no:cacheprovider -rfE > $R/o-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/o-stages.txt
for v in old new; do
  if [ $v = new ]; then P=scripts/in_place.py; else P=.ab/$v/scripts/in_place.py; fi
  timeout 150 python3 $P python $D/probes/error_vs_torch.py 8x131072,16x131072,64x50257,4x262144 40 > $R/o-error-$v.log 2>&1; echo "error $v rc=$? $(date +%T)" >> $R/o-stages.txt
done
F=16x131072,32x131072,64x65536,64x50257,16x262144,64x131072,1024x131072,2048x65536,256x262144,512x50257
for r in 1 2; do
  for v in old new; do
    if [ $v = new ]; then P=scripts/in_place.py; else P=.ab/$v/scripts/in_place.py; fi
    timeout 120 python3 $P lab bench softmax --impls triton.softmax --shapes $F --dtypes float32 --time-cap 0.3 --json $R/o-ab-$v-fwd-$r.json > $R/o-ab-$v-fwd-$r.log 2>&1
    echo "ab $v $r rc=$? $(date +%T)" >> $R/o-stages.txt
  done
done
python3 $A/ab_trees.py $R o old new > $R/o-ab-summary.txt 2>&1
cat $R/o-stages.txt; tail -1 $R/o-tests.log; grep -E "FAILED|ERROR" $R/o-tests.log | head -8; cat $R/o-error-old.log $R/o-error-new.log; cat $R/o-ab-summary.txt
cd $OUT && tar czf o.tgz o && rm -rf o
