# call g (carries the second part of the peers' wheels): call time of both backends beside F.softmax (scripts/triton_host_overhead.py, scripts/cuda_call_time.py)
R=$OUT/g; mkdir -p $R; cp .whl/p2/* ~/peers/
git log --oneline -1 > $R/g-env.txt; git status --short >> $R/g-env.txt
timeout 200 python3 scripts/in_place.py python scripts/triton_host_overhead.py --json $R/g-calltime_triton.json > $R/g-calltime.log 2>&1; echo "triton rc=$?" >> $R/g-stages.txt
timeout 200 python3 scripts/in_place.py python scripts/cuda_call_time.py --json $R/g-calltime_cuda.json >> $R/g-calltime.log 2>&1; echo "cuda rc=$?" >> $R/g-stages.txt
cat $R/g-stages.txt; tail -30 $R/g-calltime.log
cd $OUT && tar czf g.tgz g && rm -rf g
