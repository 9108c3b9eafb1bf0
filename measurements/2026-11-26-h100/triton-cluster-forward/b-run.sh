# call b: the forward over thread-block clusters when the rows' clusters fit at once (kernels_triton/cluster.py, launch.py; working tree) against HEAD (.ab/old): kernels_triton's GPU tests; lab bench softmax (device and call time), old and new in turns, two rounds
R=$OUT/b; mkdir -p $R; D=measurements/2026-11-26-h100/triton-cluster-forward
git log --oneline -1 > $R/b-env.txt; git status --short >> $R/b-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/b-env.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/b-env.txt
start=$(date +%s); timeout 300 scripts/test-in-place tests/kernels_triton -m gpu -q -p no:cacheprovider -rfE > $R/b-tests-triton-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/b-stages.txt
S=64x50257,16x131072,8x128257,1x131072,4x50257,32x65536,128x32768,1024x131072,4096x32768
for r in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=.ab/old/scripts/in_place.py; else P=scripts/in_place.py; fi
    timeout 100 python3 $P lab bench softmax --impls triton.softmax --shapes $S --dtypes float32,bfloat16 --time-cap 0.3 --json $R/b-ab-$v-fwd-$r.json > $R/b-ab-$v-fwd-$r.log 2>&1
    echo "ab $v fwd $r rc=$? $(date +%T)" >> $R/b-stages.txt
  done
done
python3 $D/probes/ab_summary.py $R b > $R/b-ab-summary.txt 2>&1
cat $R/b-stages.txt; tail -2 $R/b-tests-triton-gpu.log; grep -E "FAILED|ERROR" $R/b-tests-triton-gpu.log | head; cat $R/b-ab-summary.txt
cd $OUT && tar czf b.tgz b && rm -rf b
