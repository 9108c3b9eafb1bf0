# call a: a Triton forward over thread-block clusters, the exchange through distributed shared memory by inline PTX (probes/cluster_fwd.py), against kernels_triton and kernels_cuda
R=$OUT/a; mkdir -p $R; D=$PWD/measurements/2026-11-26-h100/triton-cluster-exchange
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/a-env.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/a-env.txt
timeout 400 python3 scripts/in_place.py python $D/probes/cluster_fwd.py > $R/a-cluster-fwd.log 2>&1; echo "probe rc=$?" >> $R/a-stages.txt
cat $R/a-stages.txt; grep -v -i warn $R/a-cluster-fwd.log | tail -14
cd $OUT && tar czf a.tgz a && rm -rf a
