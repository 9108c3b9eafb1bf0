# call p (tree 85a71fc): probes/held16.py barrier (v3's merge barrier: the row's warps against the whole block's) at rows of 600-1024; kernels_cuda's GPU tests with the row barrier
R=$OUT/p; mkdir -p $R; D=measurements/2026-11-27-h100/cuda-held-16bit
echo "tree 85a71fc" > $R/p-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/p-env.txt
export TIME_CAP_S=1.6
timeout 200 python3 scripts/in_place.py python $D/probes/held16.py barrier 4096x600,65536x600,262144x600,32768x768,8192x1024,32768x1024,131072x1024 float32 > $R/p-barrier.log 2>&1; echo "barrier fp32 rc=$? $(date +%T)" >> $R/p-stages.txt
timeout 120 python3 scripts/in_place.py python $D/probes/held16.py barrier 4096x600,65536x600,8192x1024,32768x1024 bfloat16 >> $R/p-barrier.log 2>&1; echo "barrier bf16 rc=$? $(date +%T)" >> $R/p-stages.txt
start=$(date +%s); timeout 240 scripts/test-in-place tests/kernels_cuda -m gpu -q -p no:cacheprovider -rfE > $R/p-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/p-stages.txt
cat $R/p-stages.txt $R/p-barrier.log; tail -2 $R/p-tests.log; grep -E "FAILED|ERROR" $R/p-tests.log | head
cd $OUT && tar czf p.tgz p && rm -rf p
