# call d (carries the fourth part of the peers' wheels and .whl/p3b; run as `mkdir -p ~/peers && cp .whl/p3b/* ~/peers/ && bash d-run.sh`): the peers installed in ~/peers/site; the sweep of both directions, lab bench timing each point's implementations in turns (3 rounds), beside F.softmax, torch.compile, QuACK and Liger
R=$OUT/d; mkdir -p $R; P=~/peers; T0=$(date +%s)
cp .whl/p4/* $P/; cd $P && cat cu13.part.aa cu13.part.ab cu13.part.ac > nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl && echo "$(cat cu13.sha256)  nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl" | sha256sum -c > $R/d-peers-install.log 2>&1
pip install --no-deps --target $P/site $P/*.whl >> $R/d-peers-install.log 2>&1; echo "pip rc=$?" >> $R/d-peers-install.log
cd - > /dev/null
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
: > $R/d-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/d-env.txt; nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $R/d-env.txt
S=4096x600,65536x600,262144x600,32768x1024,16384x4096,8192x8192,4096x32768,1024x131072,256x262144,2048x65536,64x50257,16x131072
I=cuda.auto,triton.softmax,torch.compile.softmax.cuda,quack.softmax,liger.softmax
timeout 280 python3 scripts/in_place.py lab bench softmax --shapes $S --impls $I --time-cap 0.3 --rounds 3 --json $R/d-sweep_softmax_peers.json > $R/d-sweep-fwd-peers.log 2>&1; echo "fwd rc=$? $(date +%T)" >> $R/d-stages.txt
I=cuda.softmax_backward,triton.softmax_backward,torch.compile.softmax_backward.cuda,quack.softmax_backward,liger.softmax_backward
timeout 250 python3 scripts/in_place.py lab bench softmax_backward --shapes $S --impls $I --time-cap 0.3 --rounds 3 --json $R/d-sweep_softmax_backward_peers.json > $R/d-sweep-bwd-peers.log 2>&1; echo "bwd rc=$? $(date +%T)" >> $R/d-stages.txt
cat $R/d-stages.txt; tail -2 $R/d-peers-install.log
ROOT=$(pwd); (cd $R && python3 $ROOT/measurements/2026-11-26-h100/final-sweep-3/probes/vs_peers.py d > d-vs-peers.txt 2>&1; python3 $ROOT/measurements/2026-11-27-h100/final-check-5/probes/misses.py d > d-misses.txt 2>&1; cat d-vs-peers.txt d-misses.txt)
if [ $(( $(date +%s) - T0 )) -lt 420 ]; then  # QuACK beside ours under ncu at 4096x600, while the call has time
  timeout 120 python3 scripts/in_place.py lab ncu --impl triton.softmax,cuda.auto,quack.softmax,triton.softmax_backward,cuda.softmax_backward,quack.softmax_backward --shape 4096x600 --dtype float32 --out $R/ncu > $R/d-ncu.log 2>&1; echo "ncu rc=$?" >> $R/d-stages.txt
  rm -f $R/ncu/*.ncu-rep; tail -12 $R/d-ncu.log
fi
cd $OUT && tar czf d.tgz d && rm -rf d
