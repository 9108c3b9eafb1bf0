# call d (tree 7d0db8d; carries the second part of the peers' wheels): call time of both backends beside F.softmax (scripts/triton_host_overhead.py, scripts/cuda_call_time.py)
R=$OUT/d; mkdir -p $R; cp .whl/p2/* ~/peers/
echo "tree 7d0db8d" > $R/d-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/d-env.txt
timeout 200 python3 scripts/in_place.py python scripts/triton_host_overhead.py --json $R/d-calltime_triton.json > $R/d-calltime.log 2>&1; echo "triton rc=$? $(date +%T)" >> $R/d-stages.txt
timeout 200 python3 scripts/in_place.py python scripts/cuda_call_time.py --json $R/d-calltime_cuda.json >> $R/d-calltime.log 2>&1; echo "cuda rc=$? $(date +%T)" >> $R/d-stages.txt
cat $R/d-stages.txt; tail -30 $R/d-calltime.log
cd $OUT && tar czf d.tgz d && rm -rf d
