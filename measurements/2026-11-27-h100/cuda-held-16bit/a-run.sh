# call a (tree ac5f8da): probes/held16.py: 04 at 16-bit few and long rows, chunk in shared memory (the package's plan) against held in registers with fp32 exponentials; v3's launch shapes at 32768x1024 and rows of 600; kernels_triton's forward beside each, all in turns
R=$OUT/a; mkdir -p $R; D=measurements/2026-11-27-h100/cuda-held-16bit
echo "tree ac5f8da" > $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/a-env.txt
python3 -c "import torch, triton, cupy; print(torch.__version__, triton.__version__, cupy.__version__)" >> $R/a-env.txt
timeout 300 python3 scripts/in_place.py python $D/probes/held16.py cluster 1x131072,16x131072,32x131072,64x131072,128x65536,256x131072,1024x131072,2048x65536,256x262144,300x147456 bfloat16 > $R/a-cluster.log 2>&1; echo "cluster rc=$? $(date +%T)" >> $R/a-stages.txt
timeout 60 python3 scripts/in_place.py python $D/probes/held16.py cluster 16x131072,1024x131072 float16 >> $R/a-cluster.log 2>&1; echo "cluster fp16 rc=$? $(date +%T)" >> $R/a-stages.txt
timeout 200 python3 scripts/in_place.py python $D/probes/held16.py fused 32768x1024,4096x600,65536x600 float32,bfloat16 > $R/a-fused.log 2>&1; echo "fused rc=$? $(date +%T)" >> $R/a-stages.txt
cat $R/a-stages.txt $R/a-cluster.log $R/a-fused.log
cd $OUT && tar czf a.tgz a && rm -rf a
