# call a: probes/persistent_fwd.py (a Triton forward over thread-block clusters, persistent, loading ahead) against kernels_triton and kernels_cuda; then kernels_triton's GPU tests at the tree's package code
R=$OUT/a; mkdir -p $R; D=$PWD/measurements/2026-11-26-h100/triton-cluster-forward
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/a-env.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/a-env.txt
start=$(date +%s); timeout 270 python3 scripts/in_place.py python $D/probes/persistent_fwd.py > $R/a-persistent-fwd.log 2>&1; echo "probe rc=$? $(( $(date +%s) - start )) s" >> $R/a-stages.txt
start=$(date +%s); timeout 280 scripts/test-in-place tests/kernels_triton -m gpu -q -p no:cacheprovider -rfE > $R/a-tests-triton-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/a-stages.txt
cat $R/a-stages.txt; grep -v -i warn $R/a-persistent-fwd.log | tail -80; tail -2 $R/a-tests-triton-gpu.log; grep -E "FAILED|ERROR" $R/a-tests-triton-gpu.log | head
cd $OUT && tar czf a.tgz a && rm -rf a
