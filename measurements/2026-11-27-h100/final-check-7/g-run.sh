# call g (tree 7d0db8d; the peers as installed by call f, same machine): the sweep again of both directions, lab bench timing each point's implementations in turns (3 rounds), beside F.softmax, torch.compile, QuACK and Liger
R=$OUT/g; mkdir -p $R; P=~/peers
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
echo "tree 7d0db8d" > $R/g-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/g-env.txt; nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $R/g-env.txt
S=4096x600,65536x600,262144x600,32768x1024,16384x4096,8192x8192,4096x32768,1024x131072,256x262144,2048x65536,64x50257,16x131072
I=cuda.auto,triton.softmax,torch.compile.softmax.cuda,quack.softmax,liger.softmax
timeout 280 python3 scripts/in_place.py lab bench softmax --shapes $S --impls $I --time-cap 0.3 --rounds 3 --json $R/g-sweep_softmax_peers.json > $R/g-sweep-fwd-peers.log 2>&1; echo "fwd rc=$? $(date +%T)" >> $R/g-stages.txt
I=cuda.softmax_backward,triton.softmax_backward,torch.compile.softmax_backward.cuda,quack.softmax_backward,liger.softmax_backward
timeout 250 python3 scripts/in_place.py lab bench softmax_backward --shapes $S --impls $I --time-cap 0.3 --rounds 3 --json $R/g-sweep_softmax_backward_peers.json > $R/g-sweep-bwd-peers.log 2>&1; echo "bwd rc=$? $(date +%T)" >> $R/g-stages.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $R/g-env.txt; cat $R/g-stages.txt
ROOT=$(pwd); (cd $R && python3 $ROOT/measurements/2026-11-26-h100/final-sweep-3/probes/vs_peers.py g > g-vs-peers.txt 2>&1; python3 $ROOT/measurements/2026-11-27-h100/final-check-5/probes/misses.py g > g-misses.txt 2>&1; cat g-vs-peers.txt g-misses.txt)
cd $OUT && tar czf g.tgz g && rm -rf g
