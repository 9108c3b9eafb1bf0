# call c: as call b, the package's form (8 warps at 64 registers, which spills 8 bytes at 262144 under Triton 3.6) against 8 warps at 63 (62, none spilled), uncapped (63) and 4 warps at 96; more row lengths, and fp16
R=$OUT/c; mkdir -p $R; D=measurements/2026-11-27-h100/pair-reduce
git log --oneline -1 > $R/c-env.txt; git status --short >> $R/c-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/c-env.txt
P="timeout 400 python3 scripts/in_place.py python $D/probes/cluster_forms.py"
$P 128x262144,256x262144,512x200000,1024x262144,300x147456,160x229376 bfloat16 16384x8x64:0,16384x8x63:0,16384x8:0,16384x4x96:0 5 > $R/c-long.log 2>&1; echo "bf16 rc=$? $(date +%T)" >> $R/c-stages.txt
$P 256x262144,512x200000 float16 16384x8x64:0,16384x8x63:0,16384x8:0,16384x4x96:0 5 >> $R/c-long.log 2>&1; echo "fp16 rc=$? $(date +%T)" >> $R/c-stages.txt
cat $R/c-stages.txt; sed -E 's/  rounds.*//' $R/c-long.log
cd $OUT && tar czf c.tgz c && rm -rf c
