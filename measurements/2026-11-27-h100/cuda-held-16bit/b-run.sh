# call b (tree of call a, the probe's inputs mended: maxima one above the row's, sampled rows within M): probes/held16.py cluster at 16-bit rows; fused at fp32 rows of 1024 and 2048
R=$OUT/b; mkdir -p $R; D=measurements/2026-11-27-h100/cuda-held-16bit
timeout 300 python3 scripts/in_place.py python $D/probes/held16.py cluster 1x131072,16x131072,32x131072,64x131072,128x65536,256x131072,1024x131072,2048x65536,256x262144,300x147456 bfloat16 > $R/b-cluster.log 2>&1; echo "cluster rc=$? $(date +%T)" >> $R/b-stages.txt
timeout 200 python3 scripts/in_place.py python $D/probes/held16.py fused 32768x1024,8192x1024,131072x1024,16384x2048 float32 > $R/b-fused.log 2>&1; echo "fused rc=$? $(date +%T)" >> $R/b-stages.txt
cat $R/b-stages.txt $R/b-cluster.log $R/b-fused.log
cd $OUT && tar czf b.tgz b && rm -rf b
