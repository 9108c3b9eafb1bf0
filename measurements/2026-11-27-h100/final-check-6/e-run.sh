# call e (warm, the peers still in ~/peers/site): QuACK and kernels_cuda writing into one buffer with y at several distances from x (probes/placement.py); QuACK, kernels_cuda and kernels_triton forward timed in turns, four rounds, at the sweep's shapes (probes/in_turns.py)
R=$OUT/e; mkdir -p $R; P=~/peers; D=measurements/2026-11-27-h100/final-check-6
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
git log --oneline -1 > $R/e-env.txt; git status --short >> $R/e-env.txt
timeout 120 python3 scripts/in_place.py python $D/probes/placement.py 8192x8192,16384x4096,32768x1024 bfloat16 3 > $R/e-placement.log 2>&1; echo "placement bf16 rc=$? $(date +%T)" >> $R/e-stages.txt
timeout 60 python3 scripts/in_place.py python $D/probes/placement.py 8192x8192 float32 3 >> $R/e-placement.log 2>&1; echo "placement fp32 rc=$? $(date +%T)" >> $R/e-stages.txt
S=4096x600,65536x600,262144x600,32768x1024,16384x4096,8192x8192,4096x32768,1024x131072,256x262144,2048x65536,64x50257,16x131072
timeout 280 python3 scripts/in_place.py python $D/probes/in_turns.py softmax $S float32,bfloat16 quack.softmax,cuda.auto,triton.softmax 4 > $R/e-turns-fwd.log 2>&1; echo "fwd rc=$? $(date +%T)" >> $R/e-stages.txt
cat $R/e-stages.txt; sed -E 's/  rounds.*//' $R/e-placement.log; grep -v "rounds:" $R/e-turns-fwd.log
cd $OUT && tar czf e.tgz e && rm -rf e
