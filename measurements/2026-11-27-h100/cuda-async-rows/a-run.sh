# call a: kernels_cuda's v3 with its row loaded through registers (the package's) or staged in shared memory by cp.async (probes/async.diff applied to this call's copy of the tree), at auto's and QuACK's threads a row, beside kernels_triton (probes/async_rows.py)
R=$OUT/a; mkdir -p $R; D=measurements/2026-11-27-h100/cuda-async-rows
git apply $D/probes/async.diff || exit 1
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/a-env.txt
python3 -c "import torch, triton, cupy; print(torch.__version__, triton.__version__, cupy.__version__)" >> $R/a-env.txt
P="timeout 100 python3 scripts/in_place.py python $D/probes/async_rows.py"
run() { $P "$@" >> $R/a-probe.log 2>&1; echo "$1 $2 rc=$? $(date +%T)" >> $R/a-stages.txt; }
run 8192x8192 bfloat16 auto,256:4:1,128:8:0,128:8:1,triton 5
run 16384x4096 bfloat16 auto,256:2:1,64:8:0,64:8:1,triton 5
run 32768x1024 bfloat16 auto,64:2:1,32:4:0,32:4:1,triton 5
run 65536x600 bfloat16 auto,64:2:1,32:3:0,32:3:1,triton 5
run 4096x600 bfloat16 auto,64:2:1,32:3:0,32:3:1,triton 5
run 4096x600 float32 auto,128:2:1,32:5:0,32:5:1,triton 5
run 8192x8192 float32 auto,256:8:1,triton 5
cat $R/a-stages.txt; sed -E 's/  rounds.*//' $R/a-probe.log
cd $OUT && tar czf a.tgz a && rm -rf a
