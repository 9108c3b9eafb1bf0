# call i (tree 7d0db8d with the probe's fused forms also at one row a block; the machine of call h): probes/held16.py fused at fp32 rows of 600, 1024 and 2048
R=$OUT/i; mkdir -p $R; D=measurements/2026-11-27-h100/cuda-held-16bit
timeout 300 python3 scripts/in_place.py python $D/probes/held16.py fused 32768x1024,8192x1024,131072x1024,16384x2048,65536x600 float32 > $R/i-fused.log 2>&1; echo "fused rc=$? $(date +%T)" >> $R/i-stages.txt
cat $R/i-stages.txt $R/i-fused.log
cd $OUT && tar czf i.tgz i && rm -rf i
