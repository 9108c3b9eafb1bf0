# same-run A/B of the CUDA forward: old (.ab/old, HEAD 5a9cc7e: one bulk copy a chunk, 64 KB chunks) against the working tree (cp.async, 16 KB chunks from 128 KB rows), in turns, two rounds; then kernels_cuda's GPU tests
R=$OUT/r; mkdir -p $R
git log --oneline -1 > $R/n-env.txt; git status --short >> $R/n-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/n-env.txt
S=1024x131072,256x262144,4096x32768,2048x65536,8192x32768,64x50257,16x131072,8x262144,32x50257
for r in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=.ab/old/scripts/in_place.py; else P=scripts/in_place.py; fi
    timeout 250 python3 $P lab bench softmax --impls cuda.auto --shapes $S --dtypes float32,bfloat16 --time-cap 0.3 --json $R/n-ab-$v-$r.json > $R/n-ab-$v-$r.log 2>&1
    echo "ab $v $r rc=$?" >> $R/n-stages.txt
  done
done
scripts/test-in-place tests/kernels_cuda -m gpu -q -p no:cacheprovider -rfE > $R/n-tests-cuda-gpu.log 2>&1; echo "tests rc=$?" >> $R/n-stages.txt
tail -3 $R/n-tests-cuda-gpu.log; cat $R/n-stages.txt
