# call m: the final tree (7e262b8 and the head/body/tail split also where N and the stride are packs but not multiples of 16 elements): every GPU test; lab bench softmax at such shapes, against HEAD (.ab/old), in turns, two rounds
R=$OUT/m; mkdir -p $R; D=measurements/2026-11-26-h100/triton-cluster-forward
git log --oneline -1 > $R/m-env.txt; git status --short >> $R/m-env.txt
start=$(date +%s); timeout 420 scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/m-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/m-stages.txt
S=64x50264,16x131064,512x40008
for r in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=.ab/old/scripts/in_place.py; else P=scripts/in_place.py; fi
    timeout 60 python3 $P lab bench softmax --impls triton.softmax --shapes $S --dtypes float32,bfloat16 --time-cap 0.3 --json $R/m-ab-$v-fwd-$r.json > $R/m-ab-$v-fwd-$r.log 2>&1
    echo "ab $v fwd $r rc=$? $(date +%T)" >> $R/m-stages.txt
  done
done
python3 $D/probes/ab_summary.py $R m > $R/m-ab-summary.txt 2>&1
cat $R/m-stages.txt; tail -2 $R/m-tests-gpu.log; grep -E "FAILED|ERROR" $R/m-tests-gpu.log | head; cat $R/m-ab-summary.txt
cd $OUT && tar czf m.tgz m && rm -rf m
