# call b: which of the hinted copies is illegal: the working tree (v0: every read-once read hinted), .ab/v1 (04's cp.async without the hint), .ab/v2 (07's bulk copy without it), one process a case, CUDA_LAUNCH_BLOCKING=1
R=$OUT/b; mkdir -p $R; D=$PWD/measurements/2026-11-26-h100/l2-evict-first
export CUDA_LAUNCH_BLOCKING=1
for v in v0 v1 v2; do
  if [ $v = v0 ]; then P=scripts/in_place.py; else P=.ab/$v/scripts/in_place.py; fi
  for c in "fwd 1024 131072 float32" "fwd 1024 131072 bfloat16" "fwd 64 50256 bfloat16" "fwd 4096 600 float32" "bwd 1024 131072 float32" "bwd 1024 131072 bfloat16" "bwd 4096 32768 bfloat16" "bwd 4096 600 float32"; do
    echo -n "$v " >> $R/b-check.log
    timeout 60 python3 $P python $D/probes/hint_check.py $c >> $R/b-check.log 2>&1
  done
done
cat $R/b-check.log
cd $OUT && tar czf b.tgz b && rm -rf b
