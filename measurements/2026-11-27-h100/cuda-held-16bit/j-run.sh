# call j (tree 7d0db8d with the probe's fused forms at every rows-a-block, the package's threads and packs included; the machine of call h): probes/held16.py fused, v3's launch shapes at rows of 600 to 4096, fp32 and bf16, 1.2 s a form
R=$OUT/j; mkdir -p $R; D=measurements/2026-11-27-h100/cuda-held-16bit
export TIME_CAP_S=1.2
timeout 250 python3 scripts/in_place.py python $D/probes/held16.py fused 4096x600,65536x600,262144x600,32768x768,32768x1024,16384x2048,16384x4096 float32 > $R/j-fused.log 2>&1; echo "fused fp32 rc=$? $(date +%T)" >> $R/j-stages.txt
timeout 200 python3 scripts/in_place.py python $D/probes/held16.py fused 4096x600,65536x600,32768x1024,16384x2048,16384x4096 bfloat16 >> $R/j-fused.log 2>&1; echo "fused bf16 rc=$? $(date +%T)" >> $R/j-stages.txt
cat $R/j-stages.txt $R/j-fused.log
cd $OUT && tar czf j.tgz j && rm -rf j
