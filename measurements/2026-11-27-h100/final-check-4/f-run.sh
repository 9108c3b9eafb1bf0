# call f (carries the third part): the peers' wheels joined and installed in ~/peers/site; the sweep of both directions, every registered implementation, QuACK and Liger included; then lab ncu of kernels_triton, kernels_cuda and QuACK at 256x262144 and 4096x600
R=$OUT/f; mkdir -p $R; P=~/peers
cp .whl/p3/* $P/; cd $P && cat cu13.part.aa cu13.part.ab cu13.part.ac > nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl && echo "$(cat cu13.sha256)  nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl" | sha256sum -c > $R/f-peers-install.log 2>&1
pip install --no-deps --target $P/site $P/*.whl >> $R/f-peers-install.log 2>&1; echo "pip rc=$?" >> $R/f-peers-install.log
cd - > /dev/null
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
git log --oneline -1 > $R/f-env.txt; git status --short >> $R/f-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/f-env.txt
S=1024x131072,256x262144,4096x32768,65536x600,4096x600,64x50257,2048x65536,16x131072
timeout 270 python3 scripts/in_place.py lab bench softmax --shapes $S --time-cap 0.3 --json $R/f-sweep_softmax_peers.json > $R/f-sweep-fwd-peers.log 2>&1; echo "fwd rc=$? $(date +%T)" >> $R/f-stages.txt
timeout 270 python3 scripts/in_place.py lab bench softmax_backward --shapes $S --time-cap 0.3 --json $R/f-sweep_softmax_backward_peers.json > $R/f-sweep-bwd-peers.log 2>&1; echo "bwd rc=$? $(date +%T)" >> $R/f-stages.txt
cat $R/f-stages.txt; tail -2 $R/f-peers-install.log
ROOT=$(pwd); (cd $R && python3 $ROOT/measurements/2026-11-26-h100/final-sweep-3/probes/vs_peers.py f > f-vs-peers.txt 2>&1; cat f-vs-peers.txt)
start=$(date +%s); timeout 240 python3 scripts/in_place.py lab ncu --impl triton.softmax,cuda.auto,quack.softmax --shape 256x262144,4096x600 --dtype float32,bfloat16 --out $R/ncu-fwd > $R/f-ncu-fwd.log 2>&1; echo "ncu rc=$? $(( $(date +%s) - start )) s" >> $R/f-stages.txt
rm -f $R/ncu-fwd/*.ncu-rep; tail -1 $R/f-stages.txt; tail -22 $R/f-ncu-fwd.log
cd $OUT && tar czf f.tgz f && rm -rf f
