# call b: kernels_cuda.tune where v3 hands over to the cluster kernel (rows of 32-64 KB), and kernels_triton's two paths at rows of 16384-65536 (.probes/triton_paths.py)
R=$OUT/b; mkdir -p $R
git log --oneline -1 > $R/b-env.txt; git status --short >> $R/b-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/b-env.txt
timeout 200 python3 scripts/in_place.py python -m kernels_cuda.tune --shapes 8192x16384,4096x24576,4096x32768,16384x32768 --dtypes bfloat16 --time-cap 0.3 --json $R/b-tune-bf16.json > $R/b-tune-bf16.log 2>&1; echo "tune bf16 rc=$?" >> $R/b-stages.txt
timeout 200 python3 scripts/in_place.py python -m kernels_cuda.tune --shapes 8192x8192,4096x12288,4096x16384,16384x16384 --dtypes float32 --time-cap 0.3 --json $R/b-tune-fp32.json > $R/b-tune-fp32.log 2>&1; echo "tune fp32 rc=$?" >> $R/b-stages.txt
timeout 250 python3 scripts/in_place.py python .probes/triton_paths.py 4096x32768,8192x16384,16384x16384,2048x65536 > $R/b-triton-paths.log 2>&1; echo "triton paths rc=$?" >> $R/b-stages.txt
cat $R/b-stages.txt; cat $R/b-triton-paths.log | tail -20
cd $OUT && tar czf b.tgz b && rm -rf b
