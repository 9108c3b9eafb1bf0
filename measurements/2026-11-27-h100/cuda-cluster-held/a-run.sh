# call a: kernels_cuda's cluster forward (04) with its chunk held in registers (KL_ITEMS > 0) against the package's plan (the chunk in shared memory), probes/cluster_held.py; tree: 25f9eee with 04's ITEMS path and cluster_spec's items (working tree)
R=$OUT/a; mkdir -p $R; D=measurements/2026-11-27-h100/cuda-cluster-held
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; git diff HEAD -- packages > $R/a-tree.diff; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/a-env.txt
python3 -c "import torch, triton, cupy; print(torch.__version__, triton.__version__, cupy.__version__)" >> $R/a-env.txt
timeout 400 python3 scripts/in_place.py python $D/probes/cluster_held.py 1x131072,16x131072,32x131072,64x131072,128x65536,64x50257,300x147456,256x262144,1024x131072,2048x65536,4096x32768 bfloat16,float32 5 > $R/a-held.log 2>&1; echo "held rc=$? $(date +%T)" >> $R/a-stages.txt
cat $R/a-stages.txt; sed -E 's/  rounds.*//' $R/a-held.log
cd $OUT && tar czf a.tgz a && rm -rf a
