# call h (tree 7d0db8d, the machine of final-check-7's calls c-g): probes/held16.py fused at fp32 rows of 600, 768, 1024 and 2048 (v3's launch shapes in turns beside kernels_triton's forward)
R=$OUT/h; mkdir -p $R; D=measurements/2026-11-27-h100/cuda-held-16bit
timeout 300 python3 scripts/in_place.py python $D/probes/held16.py fused 32768x1024,8192x1024,4096x600,65536x600,262144x600,32768x768,16384x2048 float32 > $R/h-fused.log 2>&1; echo "fused rc=$? $(date +%T)" >> $R/h-stages.txt
cat $R/h-stages.txt $R/h-fused.log
cd $OUT && tar czf h.tgz h && rm -rf h
