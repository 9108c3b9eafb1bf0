# call u: same-run A/B of 04 with its copies in two groups, the first half's statistics taken while the second half flies (working tree), against c817786 (.ab/old), in turns, two rounds; kernels_cuda GPU tests
R=$OUT/u; mkdir -p $R
git log --oneline -1 > $R/u-env.txt; git status --short >> $R/u-env.txt
S=1024x131072,256x262144,2048x65536,64x50257,16x131072,8x262144,32x50257
for r in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=.ab/old/scripts/in_place.py; else P=scripts/in_place.py; fi
    timeout 250 python3 $P lab bench softmax --impls cuda.auto --shapes $S --dtypes float32,bfloat16 --time-cap 0.3 --json $R/u-ab-$v-$r.json > $R/u-ab-$v-$r.log 2>&1
    echo "ab $v $r rc=$?" >> $R/u-stages.txt
  done
done
scripts/test-in-place tests/kernels_cuda -m gpu -q -p no:cacheprovider -rfE > $R/u-tests-cuda-gpu.log 2>&1; echo "tests rc=$?" >> $R/u-stages.txt
tail -2 $R/u-tests-cuda-gpu.log; cat $R/u-stages.txt
cd $OUT && tar czf u.tgz u && rm -rf u
