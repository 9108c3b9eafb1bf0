# call a: the 16-bit cluster kernels hold their chunk in the storage dtype (max on packed 16-bit, widened again after the exchange; working tree) against HEAD (.ab/old): GPU tests of kernels_triton's cluster/softmax/accuracy; cluster_widths.py at chunk/warps/register caps; lab bench in turns, two rounds
R=$OUT/a; mkdir -p $R; D=measurements/2026-11-27-h100/cluster-reread; H=measurements/2026-11-27-h100/held-16bit
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/a-env.txt
python3 -c "import torch, triton, cupy; print(torch.__version__, triton.__version__, cupy.__version__)" >> $R/a-env.txt
start=$(date +%s); timeout 200 scripts/test-in-place tests/kernels_triton/test_cluster.py tests/kernels_triton/test_triton_softmax.py tests/kernels_triton/test_triton_accuracy.py -m gpu -q -p no:cacheprovider -rfE > $R/a-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/a-stages.txt
P="timeout 100 python3 scripts/in_place.py python $D/probes/cluster_widths.py"
$P 256x262144,512x200000,64x262144 16384x8,16384x8x56,16384x8x48,16384x8x40 bfloat16 fwd > $R/a-widths-fwd-long.log 2>&1; echo "widths fwd long rc=$? $(date +%T)" >> $R/a-stages.txt
$P 1024x131072,2048x65536,16x131072 8192x4,8192x4x48,8192x8 bfloat16 fwd > $R/a-widths-fwd.log 2>&1; echo "widths fwd rc=$? $(date +%T)" >> $R/a-stages.txt
$P 256x262144,1024x131072 16384x8x128,16384x8x96,16384x8x80,8192x4,8192x4x96,8192x4x80 bfloat16 bwd > $R/a-widths-bwd.log 2>&1; echo "widths bwd rc=$? $(date +%T)" >> $R/a-stages.txt
F=256x262144,512x200000,64x262144,1024x131072,2048x65536,16x131072,2048x50257,64x150000
B=256x262144,512x200000,1024x131072,2048x65536,2048x50257
for r in 1 2; do
  for v in old new; do
    if [ $v = new ]; then P=scripts/in_place.py; else P=.ab/$v/scripts/in_place.py; fi
    timeout 80 python3 $P lab bench softmax --impls triton.softmax --shapes $F --dtypes bfloat16,float16 --time-cap 0.3 --json $R/a-ab-$v-fwd-$r.json > $R/a-ab-$v-fwd-$r.log 2>&1
    timeout 80 python3 $P lab bench softmax_backward --impls triton.softmax_backward --shapes $B --dtypes bfloat16 --time-cap 0.3 --json $R/a-ab-$v-bwd-$r.json > $R/a-ab-$v-bwd-$r.log 2>&1
    echo "ab $v $r rc=$? $(date +%T)" >> $R/a-stages.txt
  done
done
python3 $D/probes/ab_trees.py $R a old new > $R/a-ab-summary.txt 2>&1
cat $R/a-stages.txt; tail -1 $R/a-tests.log; grep -E "FAILED|ERROR" $R/a-tests.log | head -8; cat $R/a-widths-*.log $R/a-ab-summary.txt
