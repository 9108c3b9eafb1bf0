# call a: kernels_cuda's cluster forward (04) in blocks of 128, 256 (the package's) and 512 threads, and with 16 or 32 KB chunks for rows of at least 128 KB (probes/cluster_threads.py)
R=$OUT/a; mkdir -p $R; D=measurements/2026-11-27-h100/cuda-cluster-threads
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/a-env.txt
python3 -c "import torch, triton, cupy; print(torch.__version__, triton.__version__, cupy.__version__)" >> $R/a-env.txt
P="timeout 250 python3 scripts/in_place.py python $D/probes/cluster_threads.py"
$P 16x131072,64x131072,1024x131072,128x262144,256x262144 bfloat16 256:16,128:16,512:16,256:32,128:32 5 > $R/a-bf16.log 2>&1; echo "bf16 rc=$? $(date +%T)" >> $R/a-stages.txt
$P 16x131072,2048x65536,256x262144 float32 256:16,128:16,512:16,256:32,128:32 5 > $R/a-f32.log 2>&1; echo "f32 rc=$? $(date +%T)" >> $R/a-stages.txt
cat $R/a-stages.txt; sed -E 's/  rounds.*//; s/ err .*//' $R/a-bf16.log $R/a-f32.log
cd $OUT && tar czf a.tgz a && rm -rf a
