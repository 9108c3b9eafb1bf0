# calls d and e (d carries the last parts of the peers' wheels, .whl/p3b and .whl/p4; run as
# `mkdir -p ~/peers && cp .whl/p3b/* ~/peers/ && bash sweep-run.sh d`, then `bash sweep-run.sh e` on the
# same machine): the peers installed in ~/peers/site (once); the sweep of both directions, lab bench
# timing each point's implementations in turns (3 rounds), beside F.softmax, torch.compile, QuACK and Liger
C=$1; R=$OUT/$C; mkdir -p $R; P=~/peers
if [ ! -d $P/site ]; then
  cp .whl/p4/* $P/; cd $P && cat cu13.part.aa cu13.part.ab cu13.part.ac > nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl && echo "$(cat cu13.sha256)  nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl" | sha256sum -c > $R/$C-peers-install.log 2>&1
  pip install --no-deps --target $P/site $P/*.whl >> $R/$C-peers-install.log 2>&1; echo "pip rc=$?" >> $R/$C-peers-install.log
  cd - > /dev/null
fi
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
: > $R/$C-env.txt; nvidia-smi --query-gpu=name,driver_version,serial --format=csv,noheader >> $R/$C-env.txt; nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $R/$C-env.txt
S=4096x600,65536x600,262144x600,32768x1024,16384x4096,8192x8192,4096x32768,1024x131072,256x262144,2048x65536,64x50257,16x131072
I=cuda.auto,triton.softmax,torch.compile.softmax.cuda,quack.softmax,liger.softmax
timeout 280 python3 scripts/in_place.py lab bench softmax --shapes $S --impls $I --time-cap 0.3 --rounds 3 --json $R/$C-sweep_softmax_peers.json > $R/$C-sweep-fwd-peers.log 2>&1; echo "fwd rc=$? $(date +%T)" >> $R/$C-stages.txt
I=cuda.softmax_backward,triton.softmax_backward,torch.compile.softmax_backward.cuda,quack.softmax_backward,liger.softmax_backward
timeout 250 python3 scripts/in_place.py lab bench softmax_backward --shapes $S --impls $I --time-cap 0.3 --rounds 3 --json $R/$C-sweep_softmax_backward_peers.json > $R/$C-sweep-bwd-peers.log 2>&1; echo "bwd rc=$? $(date +%T)" >> $R/$C-stages.txt
cat $R/$C-stages.txt; tail -2 $R/$C-peers-install.log 2>/dev/null
# The two probes below are at fd9c5b0 (git show fd9c5b0:measurements/...); today
# `lab compare SWEEP.json --against quack.softmax` prints the same ratios.
ROOT=$(pwd); (cd $R && python3 $ROOT/measurements/2026-11-26-h100/final-sweep-3/probes/vs_peers.py $C > $C-vs-peers.txt 2>&1; python3 $ROOT/measurements/2026-11-27-h100/final-check-5/probes/misses.py $C > $C-misses.txt 2>&1; cat $C-vs-peers.txt $C-misses.txt)
cd $OUT && tar czf $C.tgz $C && rm -rf $C
