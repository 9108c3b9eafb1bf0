# call b (carries the first part of the peers' wheels): call time of both backends beside F.softmax (scripts/triton_host_overhead.py, scripts/cuda_call_time.py)
R=$OUT/b; mkdir -p $R; mkdir -p ~/peers; cp .whl/p1/* ~/peers/
git log --oneline -1 > $R/b-env.txt; git status --short >> $R/b-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/b-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/b-env.txt
timeout 200 python3 scripts/in_place.py python scripts/triton_host_overhead.py --json $R/b-calltime_triton.json > $R/b-calltime.log 2>&1; echo "triton rc=$? $(date +%T)" >> $R/b-stages.txt
timeout 200 python3 scripts/in_place.py python scripts/cuda_call_time.py --json $R/b-calltime_cuda.json >> $R/b-calltime.log 2>&1; echo "cuda rc=$? $(date +%T)" >> $R/b-stages.txt
cat $R/b-stages.txt; tail -30 $R/b-calltime.log
cd $OUT && tar czf b.tgz b && rm -rf b
