# call e: kernels_cuda's cluster forward (04) takes each thread's max before its exponentials and, in fp32, writes them over its packs for the store pass to rescale (working tree on 2450af5), against 01ead5a (.ab/old, the same CUDA sources as 2450af5): GPU tests of kernels_cuda (forward and backward files); lab bench in turns, two rounds
R=$OUT/e; mkdir -p $R; A=measurements/2026-11-27-h100/cluster-reread/probes
git log --oneline -1 > $R/e-env.txt; git status --short >> $R/e-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/e-env.txt
python3 -c "import torch, triton, cupy; print(torch.__version__, triton.__version__, cupy.__version__)" >> $R/e-env.txt
start=$(date +%s); timeout 250 scripts/test-in-place tests/kernels_cuda/test_cuda_softmax.py tests/kernels_cuda/test_cuda_backward.py -m gpu -q -p no:cacheprovider -rfE > $R/e-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/e-stages.txt
F=1x131072,16x131072,32x131072,16x65536,64x65536,64x50257,16x262144,64x131072,256x262144,1024x131072,2048x65536,4096x32768,2048x50257
for r in 1 2; do
  for v in old new; do
    if [ $v = new ]; then P=scripts/in_place.py; else P=.ab/$v/scripts/in_place.py; fi
    timeout 120 python3 $P lab bench softmax --impls cuda.auto --shapes $F --dtypes float32,bfloat16 --time-cap 0.3 --json $R/e-ab-$v-fwd-$r.json > $R/e-ab-$v-fwd-$r.log 2>&1
    echo "ab $v $r rc=$? $(date +%T)" >> $R/e-stages.txt
  done
done
python3 $A/ab_trees.py $R e old new > $R/e-ab-summary.txt 2>&1
cat $R/e-stages.txt; tail -1 $R/e-tests.log; grep -E "FAILED|ERROR" $R/e-tests.log | head -8; cat $R/e-ab-summary.txt
cd $OUT && tar czf e.tgz e && rm -rf e
