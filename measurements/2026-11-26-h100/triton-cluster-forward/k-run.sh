# call k: the cluster forward's head/body/tail split and the NaN fix in split_row._merge (working tree) against HEAD (.ab/old): kernels_triton's GPU tests; a NaN beside nothing but -inf, both backends (probes/nan_beside_neg_inf.py); lab bench softmax, old and new in turns, two rounds, at split-row and odd-length shapes
R=$OUT/k; mkdir -p $R; D=measurements/2026-11-26-h100/triton-cluster-forward
git log --oneline -1 > $R/k-env.txt; git status --short >> $R/k-env.txt
start=$(date +%s); timeout 300 scripts/test-in-place tests/kernels_triton -m gpu -q -p no:cacheprovider -rfE > $R/k-tests-triton-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/k-stages.txt
timeout 120 python3 scripts/in_place.py python $D/probes/nan_beside_neg_inf.py > $R/k-nan.log 2>&1; echo "nan probe rc=$?" >> $R/k-stages.txt
S=256x262144,1024x131072,4096x32768,64x50257,512x50257,8x128257
for r in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=.ab/old/scripts/in_place.py; else P=scripts/in_place.py; fi
    timeout 100 python3 $P lab bench softmax --impls triton.softmax --shapes $S --dtypes float32,bfloat16 --time-cap 0.3 --json $R/k-ab-$v-fwd-$r.json > $R/k-ab-$v-fwd-$r.log 2>&1
    echo "ab $v fwd $r rc=$? $(date +%T)" >> $R/k-stages.txt
  done
done
python3 $D/probes/ab_summary.py $R k > $R/k-ab-summary.txt 2>&1
cat $R/k-stages.txt; tail -2 $R/k-tests-triton-gpu.log; grep -E "FAILED|ERROR" $R/k-tests-triton-gpu.log | head; grep -v " ok$" $R/k-nan.log | grep -v -i warn | head -20; cat $R/k-ab-summary.txt
cd $OUT && tar czf k.tgz k && rm -rf k
