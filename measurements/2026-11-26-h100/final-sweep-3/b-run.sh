# call b: the second part of the peers' wheels to ~/peers; call time of both backends against F.softmax
R=$OUT/b; mkdir -p $R; P=~/peers; mkdir -p $P; cp .whl/p2/* $P/
git log --oneline -1 > $R/b-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/b-env.txt
timeout 150 python3 scripts/in_place.py python scripts/triton_host_overhead.py --json $R/b-calltime_triton.json > $R/b-calltime.log 2>&1; echo "triton calltime rc=$?" >> $R/b-stages.txt
timeout 150 python3 scripts/in_place.py python scripts/cuda_call_time.py --json $R/b-calltime_cuda.json >> $R/b-calltime.log 2>&1; echo "cuda calltime rc=$?" >> $R/b-stages.txt
cat $R/b-stages.txt; ls $P
cd $OUT && tar czf b.tgz b && rm -rf b
