# call i: kernels_cuda's cluster backward at few rows in clusters of 8 (auto's cluster_size) and 16 blocks (probes/cluster_sizes.py), tree of final-check-2 plus this probe
R=$OUT/i; mkdir -p $R; D=measurements/2026-11-27-h100/cuda-bwd-few-rows
git log --oneline -1 > $R/i-env.txt; git status --short >> $R/i-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/i-env.txt
python3 -c "import torch, triton, cupy; print(torch.__version__, triton.__version__, cupy.__version__)" >> $R/i-env.txt
P="timeout 250 python3 scripts/in_place.py python $D/probes/cluster_sizes.py"
$P 1x131072,8x131072,16x131072,32x131072,64x131072,128x131072,16x65536,64x65536,256x65536 float32,bfloat16 8,16 5 > $R/i-sizes.log 2>&1; echo "sizes rc=$? $(date +%T)" >> $R/i-stages.txt
cat $R/i-stages.txt; sed -E 's/  rounds.*//' $R/i-sizes.log
cd $OUT && tar czf i.tgz i && rm -rf i
