# call d: few rows, where the sweep (final-check call c) read kernels_triton's 16-bit forward at 16x131072 3-4% slower than before: aae604c against 181e98e (.ab/old: packages and scripts), lab bench in turns, three rounds, bf16 and fp32 (whose kernel did not change: the noise); cluster_widths.py 8192 over 4 and 8 warps
R=$OUT/d; mkdir -p $R; D=measurements/2026-11-27-h100/cluster-reread
git log --oneline -1 > $R/d-env.txt; git status --short >> $R/d-env.txt
F=16x131072,32x131072,64x131072,16x65536,8x262144,64x50257
for r in 1 2 3; do
  for v in old new; do
    if [ $v = new ]; then P=scripts/in_place.py; else P=.ab/$v/scripts/in_place.py; fi
    timeout 60 python3 $P lab bench softmax --impls triton.softmax --shapes $F --dtypes bfloat16,float32 --time-cap 0.3 --json $R/d-ab-$v-fwd-$r.json > $R/d-ab-$v-fwd-$r.log 2>&1
    echo "ab $v $r rc=$? $(date +%T)" >> $R/d-stages.txt
  done
done
python3 $D/probes/ab_trees.py $R d old new > $R/d-ab-summary.txt 2>&1
timeout 60 python3 scripts/in_place.py python $D/probes/cluster_widths.py 16x131072,32x131072,16x65536 8192x4,8192x8 bfloat16 fwd > $R/d-widths.log 2>&1; echo "widths rc=$?" >> $R/d-stages.txt
cat $R/d-stages.txt $R/d-ab-summary.txt $R/d-widths.log
cd $OUT && tar czf d.tgz d && rm -rf d
