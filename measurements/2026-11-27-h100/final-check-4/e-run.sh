# call e (carries the second part of the peers' wheels): call time of both backends beside F.softmax (scripts/triton_host_overhead.py, scripts/cuda_call_time.py); lab bench of kernels_triton's 16-bit forward against c9c888e (.ab/old), in turns, two rounds
R=$OUT/e; mkdir -p $R; cp .whl/p2/* ~/peers/; A=measurements/2026-11-27-h100/cluster-reread/probes
git log --oneline -1 > $R/e-env.txt; git status --short >> $R/e-env.txt
timeout 200 python3 scripts/in_place.py python scripts/triton_host_overhead.py --json $R/e-calltime_triton.json > $R/e-calltime.log 2>&1; echo "triton rc=$?" >> $R/e-stages.txt
timeout 200 python3 scripts/in_place.py python scripts/cuda_call_time.py --json $R/e-calltime_cuda.json >> $R/e-calltime.log 2>&1; echo "cuda rc=$?" >> $R/e-stages.txt
F=16x131072,64x131072,128x65536,128x262144,256x262144,300x147456,512x200000,1024x262144,1024x131072,64x50257
for r in 1 2; do
  for v in old new; do
    if [ $v = new ]; then P=scripts/in_place.py; else P=$PWD/.ab/$v/scripts/in_place.py; fi
    timeout 100 python3 $P lab bench softmax --impls triton.softmax --shapes $F --dtypes bfloat16 --time-cap 0.3 --json $R/e-ab-$v-fwd-$r.json > $R/e-ab-$v-fwd-$r.log 2>&1
    echo "ab $v $r rc=$? $(date +%T)" >> $R/e-stages.txt
  done
done
python3 $A/ab_trees.py $R e old new > $R/e-ab-summary.txt 2>&1
cat $R/e-stages.txt; tail -30 $R/e-calltime.log; cat $R/e-ab-summary.txt
cd $OUT && tar czf e.tgz e && rm -rf e
