# call c: same-run A/B of the CUDA forward: old (.ab/old, HEAD 95e46e7: v3 up to 64 KB rows) against the working tree (v3 up to 32 KB, then 2-block clusters; v3 again for a row no cluster takes), in turns, two rounds; then kernels_cuda's GPU tests
R=$OUT/c; mkdir -p $R
git log --oneline -1 > $R/c-env.txt; git status --short >> $R/c-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/c-env.txt
S=4096x12288,4096x16384,4096x24576,4096x32768,16384x16384,64x50257,2048x10000
for r in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=.ab/old/scripts/in_place.py; else P=scripts/in_place.py; fi
    timeout 200 python3 $P lab bench softmax --impls cuda.auto --shapes $S --dtypes float32,bfloat16 --time-cap 0.3 --json $R/c-ab-$v-$r.json > $R/c-ab-$v-$r.log 2>&1
    echo "ab $v $r rc=$?" >> $R/c-stages.txt
  done
done
scripts/test-in-place tests/kernels_cuda -m gpu -q -p no:cacheprovider -rfE > $R/c-tests-cuda-gpu.log 2>&1; echo "tests rc=$?" >> $R/c-stages.txt
tail -3 $R/c-tests-cuda-gpu.log; cat $R/c-stages.txt
cd $OUT && tar czf c.tgz c && rm -rf c
