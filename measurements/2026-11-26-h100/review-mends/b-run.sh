mkdir -p $OUT/r
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import sys,torch,triton,cupy,numpy;print(sys.version.split()[0],'torch',torch.__version__,'triton',triton.__version__,'cupy',cupy.__version__,'numpy',numpy.__version__)"; } > $OUT/r/env.txt 2>&1
st() { local n=$1 t=$2; shift 2; local s=$(date +%s); timeout $t "$@" > $OUT/r/$n.log 2>&1; echo "$n rc=$? $(( $(date +%s) - s ))s" >> $OUT/r/stages.txt; }
st tests-triton-gpu 200 scripts/test-in-place tests/kernels_triton -m gpu -q -p no:cacheprovider -rfE
S=4096x600,65536x600,1024x131072,256x262144,64x50257,8x128257
st bench-fwd 150 python3 scripts/in_place.py lab bench softmax --impls triton.softmax,cuda.auto --shapes $S --time-cap 0.2 --json $OUT/r/bench_softmax.json
st bench-bwd 150 python3 scripts/in_place.py lab bench softmax_backward --impls triton.softmax_backward,cuda.softmax_backward --shapes $S --time-cap 0.2 --json $OUT/r/bench_softmax_backward.json
cat $OUT/r/stages.txt; tail -2 $OUT/r/tests-triton-gpu.log; tail -30 $OUT/r/bench-fwd.log; tail -30 $OUT/r/bench-bwd.log
