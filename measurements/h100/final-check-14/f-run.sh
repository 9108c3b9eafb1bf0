# call f (the same machine as d and e, QuACK installed there): lab ncu of both backends and QuACK at the
# points where d and e had a backend below QuACK by more than 0.5% in both runs
R=$OUT/f; mkdir -p $R; P=~/peers; export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
timeout 200 python3 scripts/in_place.py lab ncu --impl cuda.auto,triton.softmax,quack.softmax --shape 4096x600,32768x1024 --dtype float32 --out $R/ncu-fwd-f32 > $R/f-ncu-fwd-f32.log 2>&1; echo "fwd f32 rc=$?" >> $R/f-stages.txt
timeout 120 python3 scripts/in_place.py lab ncu --impl cuda.auto,triton.softmax,quack.softmax --shape 256x262144 --dtype bfloat16 --out $R/ncu-fwd-bf16 > $R/f-ncu-fwd-bf16.log 2>&1; echo "fwd bf16 rc=$?" >> $R/f-stages.txt
timeout 200 python3 scripts/in_place.py lab ncu --impl cuda.softmax_backward,triton.softmax_backward,quack.softmax_backward --shape 4096x600,2048x65536 --dtype float32 --out $R/ncu-bwd-f32 > $R/f-ncu-bwd-f32.log 2>&1; echo "bwd f32 rc=$?" >> $R/f-stages.txt
timeout 120 python3 scripts/in_place.py lab ncu --impl cuda.softmax_backward,triton.softmax_backward,quack.softmax_backward --shape 4096x600 --dtype bfloat16 --out $R/ncu-bwd-bf16 > $R/f-ncu-bwd-bf16.log 2>&1; echo "bwd bf16 rc=$?" >> $R/f-stages.txt
rm -f $R/*/*.ncu-rep; cat $R/f-stages.txt; for f in $R/f-ncu-*.log; do echo "== $f"; grep -E "^ *[0-9]+ " $f | grep -v spin | cut -c1-170; done
cd $OUT && tar czf f.tgz f && rm -rf f
