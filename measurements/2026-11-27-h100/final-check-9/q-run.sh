# call q (tree 6e27d91: the review's mends, PTX of every fused and cluster spec unchanged, labtools' call time in one place): every GPU test; lab bench through run_sweep at three shapes, both backends beside F.softmax
R=$OUT/q; mkdir -p $R
echo "tree 6e27d91" > $R/q-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/q-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/q-env.txt
start=$(date +%s); timeout 420 scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/q-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/q-stages.txt
timeout 120 python3 scripts/in_place.py lab bench softmax --shapes 4096x600,16x131072,8192x8192 --dtypes float32,bfloat16 --impls cuda.auto,triton.softmax --time-cap 0.3 --json $R/q-bench.json > $R/q-bench.log 2>&1; echo "bench rc=$? $(date +%T)" >> $R/q-stages.txt
cat $R/q-stages.txt; tail -2 $R/q-tests-gpu.log; grep -E "FAILED|ERROR" $R/q-tests-gpu.log | head; tail -25 $R/q-bench.log
cd $OUT && tar czf q.tgz q && rm -rf q
