# call r (carries the second part of the peers' wheels): call time of both backends beside F.softmax (scripts/triton_host_overhead.py, scripts/cuda_call_time.py)
R=$OUT/r; mkdir -p $R; cp .whl/p2/* ~/peers/
git log --oneline -1 > $R/r-env.txt; git status --short >> $R/r-env.txt
timeout 200 python3 scripts/in_place.py python scripts/triton_host_overhead.py --json $R/r-calltime_triton.json > $R/r-calltime.log 2>&1; echo "triton rc=$?" >> $R/r-stages.txt
timeout 200 python3 scripts/in_place.py python scripts/cuda_call_time.py --json $R/r-calltime_cuda.json >> $R/r-calltime.log 2>&1; echo "cuda rc=$?" >> $R/r-stages.txt
cat $R/r-stages.txt; tail -30 $R/r-calltime.log
cd $OUT && tar czf r.tgz r && rm -rf r
