# call q: the peers' wheels joined and installed in ~/peers/site; the sweep of both directions with QuACK and Liger; call time of both backends
R=$OUT/r; mkdir -p $R; P=~/peers
cp .whl/b/* $P/; cd $P && cat cu13.part.aa cu13.part.ab > nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl && echo "$(cat cu13.sha256)  nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl" | sha256sum -c > $R/q-peers-install.log 2>&1
pip install --no-deps --target $P/site $P/*.whl >> $R/q-peers-install.log 2>&1; echo "pip rc=$?" >> $R/q-peers-install.log
cd - > /dev/null
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
git log --oneline -1 > $R/q-env.txt; git status --short >> $R/q-env.txt
S=1024x131072,256x262144,4096x32768,65536x600,4096x600,64x50257
timeout 200 python3 scripts/in_place.py lab bench softmax --shapes $S --time-cap 0.3 --json $R/q-sweep_softmax_peers.json > $R/q-sweep-fwd-peers.log 2>&1; echo "fwd rc=$?" >> $R/q-stages.txt
timeout 200 python3 scripts/in_place.py lab bench softmax_backward --shapes $S --time-cap 0.3 --json $R/q-sweep_softmax_backward_peers.json > $R/q-sweep-bwd-peers.log 2>&1; echo "bwd rc=$?" >> $R/q-stages.txt
unset PYTHONPATH
timeout 100 python3 scripts/in_place.py python scripts/triton_host_overhead.py --json $R/q-calltime_triton.json > $R/q-calltime.log 2>&1; echo "triton calltime rc=$?" >> $R/q-stages.txt
timeout 100 python3 scripts/in_place.py python scripts/cuda_call_time.py --json $R/q-calltime_cuda.json >> $R/q-calltime.log 2>&1; echo "cuda calltime rc=$?" >> $R/q-stages.txt
cat $R/q-stages.txt; tail -2 $R/q-peers-install.log; grep -E "QuACK|auto|Triton|CUDA bwd|label" $R/q-sweep-fwd-peers.log $R/q-sweep-bwd-peers.log | grep -v "\[" | cut -c1-160 | head -70
