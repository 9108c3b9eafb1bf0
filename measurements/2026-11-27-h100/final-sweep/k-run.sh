# call k (carries the second part of the peers' wheels): call time of both backends beside F.softmax (scripts/triton_host_overhead.py, scripts/cuda_call_time.py)
R=$OUT/k; mkdir -p $R; cp .whl/p2/* ~/peers/
git log --oneline -1 > $R/k-env.txt; git status --short >> $R/k-env.txt
timeout 200 python3 scripts/in_place.py python scripts/triton_host_overhead.py --json $R/k-calltime_triton.json > $R/k-calltime.log 2>&1; echo "triton rc=$?" >> $R/k-stages.txt
timeout 200 python3 scripts/in_place.py python scripts/cuda_call_time.py --json $R/k-calltime_cuda.json >> $R/k-calltime.log 2>&1; echo "cuda rc=$?" >> $R/k-stages.txt
cat $R/k-stages.txt; tail -30 $R/k-calltime.log
