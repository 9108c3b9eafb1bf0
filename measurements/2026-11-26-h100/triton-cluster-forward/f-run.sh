# call f (carries the second part of the peers' wheels): call time of both backends beside F.softmax (scripts/triton_host_overhead.py, scripts/cuda_call_time.py)
R=$OUT/f; mkdir -p $R
cp .whl/p2/* ~/peers/
git log --oneline -1 > $R/f-env.txt; git status --short >> $R/f-env.txt
timeout 200 python3 scripts/in_place.py python scripts/triton_host_overhead.py --json $R/f-calltime_triton.json > $R/f-calltime.log 2>&1; echo "triton rc=$?" >> $R/f-stages.txt
timeout 200 python3 scripts/in_place.py python scripts/cuda_call_time.py --json $R/f-calltime_cuda.json >> $R/f-calltime.log 2>&1; echo "cuda rc=$?" >> $R/f-stages.txt
cat $R/f-stages.txt; tail -30 $R/f-calltime.log
cd $OUT && tar czf f.tgz f && rm -rf f
