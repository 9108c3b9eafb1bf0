# call h: cluster_widths.py at e6344a2 + the probe's register cap: rows past 131072 columns over 16384-element blocks with maxnreg, so that three 8-warp blocks (or two 16-warp) share an SM
R=$OUT/h; mkdir -p $R; D=measurements/2026-11-27-h100/cluster-reread
git log --oneline -1 > $R/h-env.txt; git status --short >> $R/h-env.txt
P="timeout 150 python3 scripts/in_place.py python $D/probes/cluster_widths.py"
$P 256x262144,512x200000 16384x8,16384x8x80,16384x8x72,16384x8x64 bfloat16 fwd > $R/h-fwd-bf16.log 2>&1; echo "fwd bf16 rc=$?" >> $R/h-stages.txt
$P 256x262144 16384x8,16384x8x80,16384x8x72 float32 fwd > $R/h-fwd-fp32.log 2>&1; echo "fwd fp32 rc=$?" >> $R/h-stages.txt
$P 256x262144 16384x8,16384x8x128,16384x8x120,16384x16x64 bfloat16 bwd > $R/h-bwd.log 2>&1; echo "bwd rc=$?" >> $R/h-stages.txt
cat $R/h-stages.txt $R/h-fwd-bf16.log $R/h-fwd-fp32.log $R/h-bwd.log
cd $OUT && tar czf h.tgz h && rm -rf h
