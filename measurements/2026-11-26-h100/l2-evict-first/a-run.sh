# call a: same-run A/B of the L2 evict_first policy on read-once loads (working tree) against HEAD 1e1b17d (.ab/old): lab bench forward at the sweep's shapes, both backends, in turns, two rounds; the L2-state probe at rows of 600 from each tree
R=$OUT/a; mkdir -p $R; D=measurements/2026-11-26-h100/l2-evict-first
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/a-env.txt
python3 -c "import torch, triton, cupy; print(torch.__version__, triton.__version__, cupy.__version__)" >> $R/a-env.txt
S=1024x131072,256x262144,4096x32768,65536x600,4096x600,64x50257
for r in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=.ab/old/scripts/in_place.py; else P=scripts/in_place.py; fi
    timeout 110 python3 $P lab bench softmax --impls cuda.auto,triton.softmax --shapes $S --dtypes float32,bfloat16 --time-cap 0.3 --json $R/a-ab-$v-fwd-$r.json > $R/a-ab-$v-fwd-$r.log 2>&1
    echo "ab $v fwd $r rc=$? $(date +%T)" >> $R/a-stages.txt
  done
done
for v in old new; do
  if [ $v = old ]; then P=.ab/old/scripts/in_place.py; else P=scripts/in_place.py; fi
  timeout 60 python3 $P python $PWD/$D/probes/flush_modes_ab.py $v > $R/a-flush-$v.log 2>&1
  echo "flush $v rc=$? $(date +%T)" >> $R/a-stages.txt
done
cat $R/a-stages.txt; cat $R/a-flush-*.log | grep 4096x600
cd $OUT && tar czf a.tgz a && rm -rf a
