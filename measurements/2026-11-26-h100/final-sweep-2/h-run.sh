# call h: kernels_cuda call time, the working tree against 95e46e7 (.ab/old, before this folder's changes) in the same run (--before), twice
R=$OUT/h; mkdir -p $R
git log --oneline -1 > $R/h-env.txt; git status --short >> $R/h-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/h-env.txt
for r in 1 2; do
  timeout 200 python3 scripts/in_place.py python scripts/cuda_call_time.py --before .ab/old/packages/kernels-cuda/src --json $R/h-calltime-$r.json > $R/h-calltime-$r.log 2>&1; echo "calltime $r rc=$?" >> $R/h-stages.txt
done
cat $R/h-stages.txt
cd $OUT && tar czf h.tgz h && rm -rf h
