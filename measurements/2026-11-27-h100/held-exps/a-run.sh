# call a: the Triton cluster forward holds exp(x - m) in fp32 across the exchange (HOLD_EXPS; on for fp32 in the working tree): GPU tests of kernels_triton's cluster/softmax/accuracy; hold_exps.py, HOLD_EXPS off and on in turns, fp32 at every row length, 16-bit up to 131072 columns (past that it spills at the 64-register cap)
R=$OUT/a; mkdir -p $R; D=measurements/2026-11-27-h100/held-exps
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/a-env.txt
python3 -c "import torch, triton, cupy; print(torch.__version__, triton.__version__, cupy.__version__)" >> $R/a-env.txt
start=$(date +%s); timeout 200 scripts/test-in-place tests/kernels_triton/test_cluster.py tests/kernels_triton/test_triton_softmax.py tests/kernels_triton/test_triton_accuracy.py -m gpu -q -p no:cacheprovider -rfE > $R/a-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/a-stages.txt
P="timeout 150 python3 scripts/in_place.py python $D/probes/hold_exps.py"
$P 1x131072,16x131072,32x65536,64x131072,16x65536,1024x131072,2048x65536,4096x32768,64x50257,512x50257,256x262144,64x262144,16x262144 float32 3 > $R/a-fp32.log 2>&1; echo "fp32 rc=$? $(date +%T)" >> $R/a-stages.txt
$P 1x131072,16x131072,32x65536,64x131072,16x65536,32x131072,1024x131072,2048x65536,4096x32768,64x50257,2048x50257 bfloat16,float16 3 > $R/a-16bit.log 2>&1; echo "16bit rc=$? $(date +%T)" >> $R/a-stages.txt
cat $R/a-stages.txt; tail -1 $R/a-tests.log; grep -E "FAILED|ERROR" $R/a-tests.log | head -8; cat $R/a-fp32.log $R/a-16bit.log | cut -c1-250
cd $OUT && tar czf a.tgz a && rm -rf a
