# call s (carries the third part): the peers' wheels joined and installed in ~/peers/site; the sweep of both directions, every registered implementation, QuACK and Liger included
R=$OUT/s; mkdir -p $R; P=~/peers
cp .whl/p3/* $P/; cd $P && cat cu13.part.aa cu13.part.ab cu13.part.ac > nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl && echo "$(cat cu13.sha256)  nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl" | sha256sum -c > $R/s-peers-install.log 2>&1
pip install --no-deps --target $P/site $P/*.whl >> $R/s-peers-install.log 2>&1; echo "pip rc=$?" >> $R/s-peers-install.log
cd - > /dev/null
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
git log --oneline -1 > $R/s-env.txt; git status --short >> $R/s-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/s-env.txt
S=1024x131072,256x262144,4096x32768,65536x600,4096x600,64x50257,2048x65536,16x131072
timeout 270 python3 scripts/in_place.py lab bench softmax --shapes $S --time-cap 0.3 --json $R/s-sweep_softmax_peers.json > $R/s-sweep-fwd-peers.log 2>&1; echo "fwd rc=$? $(date +%T)" >> $R/s-stages.txt
timeout 270 python3 scripts/in_place.py lab bench softmax_backward --shapes $S --time-cap 0.3 --json $R/s-sweep_softmax_backward_peers.json > $R/s-sweep-bwd-peers.log 2>&1; echo "bwd rc=$? $(date +%T)" >> $R/s-stages.txt
cat $R/s-stages.txt; tail -2 $R/s-peers-install.log
ROOT=$(pwd); (cd $R && python3 $ROOT/measurements/2026-11-26-h100/final-sweep-3/probes/vs_peers.py s > s-vs-peers.txt 2>&1; cat s-vs-peers.txt)
cd $OUT && tar czf s.tgz s && rm -rf s
