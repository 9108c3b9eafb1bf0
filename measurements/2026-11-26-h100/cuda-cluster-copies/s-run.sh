# call s: same-run A/B of 04 without the block barrier after the copies (working tree) against c277efb (.ab/old), in turns, two rounds; kernels_cuda GPU tests
R=$OUT/s; mkdir -p $R
git log --oneline -1 > $R/s-env.txt; git status --short >> $R/s-env.txt
S=1024x131072,256x262144,2048x65536,8192x32768,64x50257,16x131072
for r in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=.ab/old/scripts/in_place.py; else P=scripts/in_place.py; fi
    timeout 250 python3 $P lab bench softmax --impls cuda.auto --shapes $S --dtypes float32,bfloat16 --time-cap 0.3 --json $R/s-ab-$v-$r.json > $R/s-ab-$v-$r.log 2>&1
    echo "ab $v $r rc=$?" >> $R/s-stages.txt
  done
done
scripts/test-in-place tests/kernels_cuda -m gpu -q -p no:cacheprovider -rfE > $R/s-tests-cuda-gpu.log 2>&1; echo "tests rc=$?" >> $R/s-stages.txt
tail -2 $R/s-tests-cuda-gpu.log; cat $R/s-stages.txt
cd $OUT && tar czf s.tgz s && rm -rf s
