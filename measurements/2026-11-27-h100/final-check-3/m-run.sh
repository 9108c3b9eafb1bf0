# call m (carries the second part of the peers' wheels): call time of both backends beside F.softmax (scripts/triton_host_overhead.py, scripts/cuda_call_time.py)
R=$OUT/m; mkdir -p $R; cp .whl/p2/* ~/peers/
git log --oneline -1 > $R/m-env.txt; git status --short >> $R/m-env.txt
timeout 200 python3 scripts/in_place.py python scripts/triton_host_overhead.py --json $R/m-calltime_triton.json > $R/m-calltime.log 2>&1; echo "triton rc=$?" >> $R/m-stages.txt
timeout 200 python3 scripts/in_place.py python scripts/cuda_call_time.py --json $R/m-calltime_cuda.json >> $R/m-calltime.log 2>&1; echo "cuda rc=$?" >> $R/m-stages.txt
cat $R/m-stages.txt; tail -30 $R/m-calltime.log
cd $OUT && tar czf m.tgz m && rm -rf m
