# call g: cluster_widths.py at e6344a2: 16-bit rows past 131072 columns over clusters at other block widths, both directions
R=$OUT/g; mkdir -p $R; D=measurements/2026-11-27-h100/cluster-reread
git log --oneline -1 > $R/g-env.txt; git status --short >> $R/g-env.txt
P="timeout 150 python3 scripts/in_place.py python $D/probes/cluster_widths.py"
$P 256x262144,512x200000,64x262144 16384x4,16384x8,32768x8,32768x16 bfloat16 fwd > $R/g-fwd.log 2>&1; echo "fwd rc=$?" >> $R/g-stages.txt
$P 256x262144,64x262144 16384x4,16384x8,32768x16 bfloat16 bwd > $R/g-bwd.log 2>&1; echo "bwd rc=$?" >> $R/g-stages.txt
cat $R/g-stages.txt $R/g-fwd.log $R/g-bwd.log
cd $OUT && tar czf g.tgz g && rm -rf g
