# call b: the same with y taken from the raw chunk after the exchange (RAW), and rows of 50256; a Triton forward over thread-block clusters, the exchange through distributed shared memory by inline PTX (probes/cluster_fwd.py), against kernels_triton and kernels_cuda
R=$OUT/b; mkdir -p $R; D=$PWD/measurements/2026-11-26-h100/triton-cluster-exchange
git log --oneline -1 > $R/b-env.txt; git status --short >> $R/b-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/b-env.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/b-env.txt
timeout 400 python3 scripts/in_place.py python $D/probes/cluster_fwd.py > $R/b-cluster-fwd.log 2>&1; echo "probe rc=$?" >> $R/b-stages.txt
cat $R/b-stages.txt; grep -v -i warn $R/b-cluster-fwd.log | tail -14
cd $OUT && tar czf b.tgz b && rm -rf b
