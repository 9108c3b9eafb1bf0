# call a: kernels_triton's backward at its committed pick and at other warps a program, beside torch.compile's and kernels_cuda's backward, in turns (probes/bwd_warps.py)
R=$OUT/a; mkdir -p $R; D=measurements/2026-11-27-h100/triton-bwd-warps
git log --oneline -1 > $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/a-env.txt
P="timeout 80 python3 scripts/in_place.py python $D/probes/bwd_warps.py"
run() { $P "$@" >> $R/a-probe.log 2>&1; echo "$1 $2 rc=$? $(date +%T)" >> $R/a-stages.txt; }
run 16384x4096 bfloat16 pick,4096:4,4096:8,4096:32,compile,cuda 4
run 16384x4096 float32 pick,4096:4,4096:8,4096:32,compile,cuda 4
run 8192x8192 bfloat16 pick,8192:8,8192:16,compile,cuda 4
run 4096x600 float32 pick,1024:2,1024:4,2048:8,compile,cuda 4
cat $R/a-stages.txt; sed -E 's/  rounds.*//' $R/a-probe.log
cd $OUT && tar czf a.tgz a && rm -rf a
