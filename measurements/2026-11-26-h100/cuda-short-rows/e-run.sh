# call e: same-run A/B of the CUDA forward and backward: old (.ab/old, HEAD 3ee1588: 16-bit rows 4 packs a thread, 256-thread blocks) against the working tree (2 packs a thread, 128-thread blocks for 16-bit rows), in turns, two rounds; kernels_cuda's GPU tests
R=$OUT/e; mkdir -p $R
git log --oneline -1 > $R/e-env.txt; git status --short >> $R/e-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/e-env.txt
S=4096x600,65536x600,262144x600,32768x1024,1024x2048,16384x2048,16384x4096
for r in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=.ab/old/scripts/in_place.py; else P=scripts/in_place.py; fi
    timeout 150 python3 $P lab bench softmax --impls cuda.auto --shapes $S --dtypes float32,bfloat16 --time-cap 0.3 --json $R/e-ab-$v-fwd-$r.json > $R/e-ab-$v-fwd-$r.log 2>&1
    echo "ab $v fwd $r rc=$?" >> $R/e-stages.txt
    timeout 150 python3 $P lab bench softmax_backward --impls cuda.softmax_backward --shapes $S --dtypes float32,bfloat16 --time-cap 0.3 --json $R/e-ab-$v-bwd-$r.json > $R/e-ab-$v-bwd-$r.log 2>&1
    echo "ab $v bwd $r rc=$?" >> $R/e-stages.txt
  done
done
scripts/test-in-place tests/kernels_cuda -m gpu -q -p no:cacheprovider -rfE > $R/e-tests-cuda-gpu.log 2>&1; echo "tests rc=$?" >> $R/e-stages.txt
tail -3 $R/e-tests-cuda-gpu.log; cat $R/e-stages.txt
cd $OUT && tar czf e.tgz e && rm -rf e
