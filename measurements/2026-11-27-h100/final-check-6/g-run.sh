# call g (warm, the peers still in ~/peers/site): lab bench's device timing of QuACK, kernels_cuda and kernels_triton as the sweep runs it, without its spin kernel, and with one input set (probes/bench_modes.py)
R=$OUT/g; mkdir -p $R; P=~/peers; D=measurements/2026-11-27-h100/final-check-6
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
git log --oneline -1 > $R/g-env.txt; git status --short >> $R/g-env.txt
timeout 250 python3 scripts/in_place.py python $D/probes/bench_modes.py softmax 8192x8192,16384x4096,32768x1024 bfloat16 quack.softmax,cuda.auto,triton.softmax 3 > $R/g-modes.log 2>&1; echo "modes rc=$? $(date +%T)" >> $R/g-stages.txt
timeout 100 python3 scripts/in_place.py python $D/probes/bench_modes.py softmax 4096x600 float32 quack.softmax,cuda.auto,triton.softmax 3 >> $R/g-modes.log 2>&1; echo "modes 600 rc=$? $(date +%T)" >> $R/g-stages.txt
cat $R/g-stages.txt $R/g-modes.log
cd $OUT && tar czf g.tgz g && rm -rf g
