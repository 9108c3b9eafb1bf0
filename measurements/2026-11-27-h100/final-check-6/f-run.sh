# call f (warm, the peers still in ~/peers/site): QuACK, kernels_cuda and kernels_triton backward timed in turns, four rounds, at the sweep's shapes (probes/in_turns.py)
R=$OUT/f; mkdir -p $R; P=~/peers; D=measurements/2026-11-27-h100/final-check-6
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
git log --oneline -1 > $R/f-env.txt; git status --short >> $R/f-env.txt
S=4096x600,65536x600,262144x600,32768x1024,16384x4096,8192x8192,4096x32768,1024x131072,256x262144,2048x65536,64x50257,16x131072
timeout 280 python3 scripts/in_place.py python $D/probes/in_turns.py softmax_backward $S float32,bfloat16 quack.softmax_backward,cuda.softmax_backward,triton.softmax_backward 4 > $R/f-turns-bwd.log 2>&1; echo "bwd rc=$? $(date +%T)" >> $R/f-stages.txt
cat $R/f-stages.txt; grep -v "rounds:" $R/f-turns-bwd.log
cd $OUT && tar czf f.tgz f && rm -rf f
