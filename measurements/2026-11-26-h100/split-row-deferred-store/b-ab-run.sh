S=256x262144,1024x131072,2048x65536,64x50257,32x262144
for r in 1 2; do
  for v in old w8 c16; do
    case $v in old) P=.ab/old/scripts/in_place.py; E="";; w8) P=scripts/in_place.py; E="KL_FWD_WARPS=8";; c16) P=scripts/in_place.py; E="KL_FWD_CHUNK=16384 KL_FWD_WARPS=16";; esac
    env $E timeout 200 python3 $P lab bench softmax --impls triton.softmax --shapes $S --dtypes bfloat16 --time-cap 0.3 --json $R/ab2-$v-$r.json > $R/ab2-$v-$r.log 2>&1
    echo "ab2 $v $r rc=$?" >> $R/stages.txt
  done
done
