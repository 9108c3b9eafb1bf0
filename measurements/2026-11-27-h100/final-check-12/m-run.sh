# call m (carries the fourth part of the peers' wheels and .whl/p3b, the small wheels moved out of the third part so that it and the tree fit one call; run as `mkdir -p ~/peers && cp .whl/p3b/* ~/peers/ && bash m-run.sh`): the peers installed in ~/peers/site; lab bench of 4096x600 and 65536x600 both directions beside QuACK and Liger, in turns (3 rounds)
R=$OUT/m; mkdir -p $R; P=~/peers
cp .whl/p4/* $P/; cd $P && cat cu13.part.aa cu13.part.ab cu13.part.ac > nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl && echo "$(cat cu13.sha256)  nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl" | sha256sum -c > $R/m-peers-install.log 2>&1
pip install --no-deps --target $P/site $P/*.whl >> $R/m-peers-install.log 2>&1; echo "pip rc=$?" >> $R/m-peers-install.log
cd - > /dev/null
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
git log -1 --format="tree %h" > $R/m-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/m-env.txt
I=cuda.auto,triton.softmax,torch.compile.softmax.cuda,quack.softmax,liger.softmax
timeout 100 python3 scripts/in_place.py lab bench softmax --shapes 4096x600,65536x600 --impls $I --time-cap 0.3 --rounds 3 --json $R/m-sweep_softmax_peers.json > $R/m-sweep-fwd-peers.log 2>&1; echo "fwd rc=$?" >> $R/m-env.txt
I=cuda.softmax_backward,triton.softmax_backward,torch.compile.softmax_backward.cuda,quack.softmax_backward,liger.softmax_backward
timeout 200 python3 scripts/in_place.py lab bench softmax_backward --shapes 4096x600,65536x600 --impls $I --time-cap 0.3 --rounds 3 --json $R/m-sweep_softmax_backward_peers.json > $R/m-sweep-bwd-peers.log 2>&1; echo "bwd rc=$?" >> $R/m-env.txt
ROOT=$(pwd); (cd $R && python3 $ROOT/measurements/2026-11-26-h100/final-sweep-3/probes/vs_peers.py m > m-vs-peers.txt 2>&1; cat m-env.txt m-vs-peers.txt)
cd $OUT && tar czf m.tgz m && rm -rf m
