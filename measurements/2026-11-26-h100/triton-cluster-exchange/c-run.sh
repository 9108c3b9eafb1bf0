# call c: the cluster kernels forward and backward at few rows (odd N included) and the backward at long rows (probes/cluster_more.py); a Triton forward over thread-block clusters, the exchange through distributed shared memory by inline PTX (probes/cluster_more.py), against kernels_triton and kernels_cuda
R=$OUT/c; mkdir -p $R; D=$PWD/measurements/2026-11-26-h100/triton-cluster-exchange
git log --oneline -1 > $R/c-env.txt; git status --short >> $R/c-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/c-env.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/c-env.txt
timeout 400 python3 scripts/in_place.py python $D/probes/cluster_more.py > $R/c-cluster-more.log 2>&1; echo "probe rc=$?" >> $R/c-stages.txt
cat $R/c-stages.txt; grep -v -i warn $R/c-cluster-more.log | tail -30
cd $OUT && tar czf c.tgz c && rm -rf c
