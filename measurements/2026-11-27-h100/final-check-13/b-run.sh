# call b (carries the second part of the peers' wheels): ncu of both backends at 4096x600, both directions
R=$OUT/b; mkdir -p $R; cp .whl/p2/* ~/peers/
start=$(date +%s); timeout 250 python3 scripts/in_place.py lab ncu --impl triton.softmax,cuda.auto,triton.softmax_backward,cuda.softmax_backward --shape 4096x600 --dtype float32,bfloat16 --out $R/ncu > $R/b-ncu.log 2>&1; echo "ncu rc=$? $(( $(date +%s) - start )) s" >> $R/b-stages.txt
rm -f $R/ncu/*.ncu-rep; cat $R/b-stages.txt; tail -30 $R/b-ncu.log
cd $OUT && tar czf b.tgz b && rm -rf b
