# call k: kernels_cuda call time at the working tree against 95e46e7 (.ab/old), with scripts/cuda_call_time.py timing F.softmax in turns inside the --before child too, twice
R=$OUT/k; mkdir -p $R
git log --oneline -1 > $R/k-env.txt 2>&1; git status --short >> $R/k-env.txt 2>&1; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/k-env.txt
for r in 1 2; do
  timeout 200 python3 scripts/in_place.py python scripts/cuda_call_time.py --before .ab/old/packages/kernels-cuda/src --json $R/k-calltime-$r.json > $R/k-calltime-$r.log 2>&1; echo "calltime $r rc=$?" >> $R/k-stages.txt
done
cat $R/k-stages.txt
cd $OUT && tar czf k.tgz k && rm -rf k
