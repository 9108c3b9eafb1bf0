# call d: the forward over thread-block clusters (fp32 at any row count; 16-bit when the rows' clusters fit at once) in kernels_triton (working tree) against HEAD (.ab/old): GPU tests of kernels_triton and minigpt_torch; lab bench softmax (device and call time), old and new in turns, two rounds
R=$OUT/d; mkdir -p $R; D=measurements/2026-11-26-h100/triton-cluster-forward
git log --oneline -1 > $R/d-env.txt; git status --short >> $R/d-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/d-env.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/d-env.txt
start=$(date +%s); timeout 330 scripts/test-in-place tests/kernels_triton tests/minigpt_torch -m gpu -q -p no:cacheprovider -rfE > $R/d-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/d-stages.txt
S=1024x131072,256x262144,4096x32768,2048x65536,65536x600,4096x600,64x50257,512x50257,16x131072,8x128257,32x65536,1x131072,4x50257
for r in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=.ab/old/scripts/in_place.py; else P=scripts/in_place.py; fi
    timeout 100 python3 $P lab bench softmax --impls triton.softmax --shapes $S --dtypes float32,bfloat16 --time-cap 0.3 --json $R/d-ab-$v-fwd-$r.json > $R/d-ab-$v-fwd-$r.log 2>&1
    echo "ab $v fwd $r rc=$? $(date +%T)" >> $R/d-stages.txt
  done
done
python3 $D/probes/ab_summary.py $R d > $R/d-ab-summary.txt 2>&1
cat $R/d-stages.txt; tail -2 $R/d-tests-gpu.log; grep -E "FAILED|ERROR" $R/d-tests-gpu.log | head; cat $R/d-ab-summary.txt
cd $OUT && tar czf d.tgz d && rm -rf d
