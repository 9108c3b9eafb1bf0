# call b: kernels_triton's cluster forward in other block forms at few rows (cluster_forms.py: CHUNKxWARPS[xCAP]:HOLD_EXPS, the first form the package's), tree 2ddf789
R=$OUT/b; mkdir -p $R; D=measurements/2026-11-27-h100/few-rows
git log --oneline -1 > $R/b-env.txt; git status --short >> $R/b-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/b-env.txt
python3 -c "import torch, triton, cupy; print(torch.__version__, triton.__version__, cupy.__version__)" >> $R/b-env.txt
P="timeout 200 python3 scripts/in_place.py python $D/probes/cluster_forms.py"
S=1x131072,8x131072,16x131072,32x131072,64x131072,16x65536,32x65536,64x65536
$P $S float32 8192x4:1,8192x8:1,16384x8:1,16384x16:1,4096x4:1,8192x4:0 3 > $R/b-fp32.log 2>&1; echo "fp32 rc=$? $(date +%T)" >> $R/b-stages.txt
$P $S bfloat16 8192x4:0,8192x8:0,8192x8:1,8192x4:1,16384x8:0,16384x16:0,4096x4:0 3 > $R/b-bf16.log 2>&1; echo "bf16 rc=$? $(date +%T)" >> $R/b-stages.txt
$P 16x262144,64x262144 float32 16384x8x80:1,16384x16:1,16384x8:1 3 > $R/b-fp32-long.log 2>&1; echo "fp32 long rc=$? $(date +%T)" >> $R/b-stages.txt
$P 16x262144,64x262144 bfloat16 16384x8x64:0,16384x16:0,16384x16:1,16384x8:1 3 > $R/b-bf16-long.log 2>&1; echo "bf16 long rc=$? $(date +%T)" >> $R/b-stages.txt
cat $R/b-stages.txt; cat $R/b-fp32.log $R/b-bf16.log $R/b-fp32-long.log $R/b-bf16-long.log | sed -E 's/  rounds.*//'
cd $OUT && tar czf b.tgz b && rm -rf b
