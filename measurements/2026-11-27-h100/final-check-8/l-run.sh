# call l (tree f2471bb; carries the second part of the peers' wheels): lab bench of cuda.auto's forward at v3's rows against 7d0db8d (.ab/old: before v3's long-row rule), the two trees taking turns, three rounds each
R=$OUT/l; mkdir -p $R; cp .whl/p2/* ~/peers/; A=measurements/2026-11-27-h100/cluster-reread/probes
echo "tree f2471bb" > $R/l-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/l-env.txt
F=4096x600,65536x600,32768x1024,16384x1200,16384x2048,65536x2048,4096x4096,16384x4096,8192x8192
for r in 1 2 3; do
  for v in old new; do
    if [ $v = new ]; then P=scripts/in_place.py; else P=$PWD/.ab/$v/scripts/in_place.py; fi
    timeout 80 python3 $P lab bench softmax --impls cuda.auto --shapes $F --dtypes float32,bfloat16 --time-cap 0.3 --json $R/l-ab-$v-fwd-$r.json > $R/l-ab-$v-fwd-$r.log 2>&1
    echo "ab $v $r rc=$? $(date +%T)" >> $R/l-stages.txt
  done
done
python3 $A/ab_trees.py $R l old new > $R/l-ab-summary.txt 2>&1
cat $R/l-stages.txt $R/l-ab-summary.txt
cd $OUT && tar czf l.tgz l && rm -rf l
