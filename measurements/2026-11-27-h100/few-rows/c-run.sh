# call c: call b's forms again, timed by the trimmed mean of each round's calls (cluster_forms.py), 5 rounds, and 128 rows
R=$OUT/c; mkdir -p $R; D=measurements/2026-11-27-h100/few-rows
git log --oneline -1 > $R/c-env.txt; git status --short >> $R/c-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/c-env.txt
python3 -c "import torch, triton, cupy; print(torch.__version__, triton.__version__, cupy.__version__)" >> $R/c-env.txt
P="timeout 250 python3 scripts/in_place.py python $D/probes/cluster_forms.py"
S=1x131072,8x131072,16x131072,32x131072,64x131072,128x131072,16x65536,32x65536,64x65536,128x65536
$P $S float32 8192x4:1,8192x8:1,16384x8:1,4096x4:1 5 > $R/c-fp32.log 2>&1; echo "fp32 rc=$? $(date +%T)" >> $R/c-stages.txt
$P $S bfloat16 8192x4:0,8192x4:1,8192x8:0,8192x8:1,16384x8:0 5 > $R/c-bf16.log 2>&1; echo "bf16 rc=$? $(date +%T)" >> $R/c-stages.txt
$P 16x262144,32x262144,64x262144 float32 16384x8x80:1,16384x8:1 5 > $R/c-fp32-long.log 2>&1; echo "fp32 long rc=$? $(date +%T)" >> $R/c-stages.txt
$P 16x262144,32x262144,64x262144 bfloat16 16384x8x64:0,16384x8:1,16384x8x80:1 5 > $R/c-bf16-long.log 2>&1; echo "bf16 long rc=$? $(date +%T)" >> $R/c-stages.txt
cat $R/c-stages.txt; cat $R/c-fp32.log $R/c-bf16.log $R/c-fp32-long.log $R/c-bf16-long.log | sed -E 's/  C=.*//'
cd $OUT && tar czf c.tgz c && rm -rf c
