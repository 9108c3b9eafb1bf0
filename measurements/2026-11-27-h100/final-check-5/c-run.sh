# call c (carries the second part of the peers' wheels): call time of both backends beside F.softmax (scripts/triton_host_overhead.py, scripts/cuda_call_time.py); torch's copy (and add, for the backward's two inputs) at the sizes of the sweep's shapes of at least 64 MiB (probes/copy_at_size.py)
R=$OUT/c; mkdir -p $R; cp .whl/p2/* ~/peers/; D=measurements/2026-11-27-h100/final-check-5
git log --oneline -1 > $R/c-env.txt; git status --short >> $R/c-env.txt
timeout 200 python3 scripts/in_place.py python scripts/triton_host_overhead.py --json $R/c-calltime_triton.json > $R/c-calltime.log 2>&1; echo "triton rc=$? $(date +%T)" >> $R/c-stages.txt
timeout 200 python3 scripts/in_place.py python scripts/cuda_call_time.py --json $R/c-calltime_cuda.json >> $R/c-calltime.log 2>&1; echo "cuda rc=$? $(date +%T)" >> $R/c-stages.txt
timeout 120 python3 scripts/in_place.py python $D/probes/copy_at_size.py 65536x600,262144x600,32768x1024,16384x4096,8192x8192,4096x32768,2048x65536,1024x131072,256x262144 float32,bfloat16 > $R/c-copy-at-size.log 2>&1; echo "copy rc=$? $(date +%T)" >> $R/c-stages.txt
cat $R/c-stages.txt; tail -30 $R/c-calltime.log; cat $R/c-copy-at-size.log
cd $OUT && tar czf c.tgz c && rm -rf c
