# call a: kernels_triton.softmax_backward below cluster.MIN_BYTES, the package's kernels against the cluster kernel (probes/bwd_threshold.py), device and call time, tree 08f70db
R=$OUT/a; mkdir -p $R; D=measurements/2026-11-27-h100/cluster-bwd-threshold
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/a-env.txt
P="timeout 250 python3 scripts/in_place.py python $D/probes/bwd_threshold.py"
$P 1x131072,8x131072,16x131072,16x65536,32x65536,64x32768,8x128257 bfloat16 3 > $R/a-bf16.log 2>&1; echo "bf16 rc=$? $(date +%T)" >> $R/a-stages.txt
$P 1x131072,8x131072,16x65536,32x32768,8x128257 float32 3 > $R/a-fp32.log 2>&1; echo "fp32 rc=$? $(date +%T)" >> $R/a-stages.txt
cat $R/a-stages.txt; sed -E 's/  rounds.*//' $R/a-bf16.log $R/a-fp32.log; grep -i error $R/a-*.log | grep -v "err=" | head
cd $OUT && tar czf a.tgz a && rm -rf a
