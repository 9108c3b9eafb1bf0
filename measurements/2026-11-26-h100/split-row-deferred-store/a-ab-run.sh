# same-run A/B: old (.ab/old, HEAD) against the working tree, in turns, two rounds
S=256x262144,1024x131072,2048x65536,64x50257,32x262144
for r in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=.ab/old/scripts/in_place.py; else P=scripts/in_place.py; fi
    timeout 200 python3 $P lab bench softmax --impls triton.softmax --shapes $S --dtypes bfloat16 --time-cap 0.3 --json $R/ab-$v-$r.json > $R/ab-$v-$r.log 2>&1
    echo "ab $v $r rc=$?" >> $R/stages.txt
  done
done
