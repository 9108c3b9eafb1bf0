mkdir -p $OUT/r
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import sys,torch,triton,cupy,numpy;print(sys.version.split()[0],'torch',torch.__version__,'triton',triton.__version__,'cupy',cupy.__version__,'numpy',numpy.__version__)"; } > $OUT/r/env.txt 2>&1
st() { local n=$1 t=$2; shift 2; local s=$(date +%s); timeout $t "$@" > $OUT/r/$n.log 2>&1; echo "$n rc=$? $(( $(date +%s) - s ))s" >> $OUT/r/stages.txt; }
st tests-gpu 290 scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE
st calltime-triton 130 python3 scripts/in_place.py python scripts/triton_host_overhead.py --json $OUT/r/calltime_triton.json
st calltime-cuda 140 python3 scripts/in_place.py python scripts/cuda_call_time.py --json $OUT/r/calltime_cuda.json
cat $OUT/r/stages.txt; tail -2 $OUT/r/tests-gpu.log; tail -15 $OUT/r/calltime-triton.log; tail -15 $OUT/r/calltime-cuda.log
