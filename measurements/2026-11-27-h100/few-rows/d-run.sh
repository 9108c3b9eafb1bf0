# call d: the one-wave form of the cluster forward (working tree: cluster.fits_one_wave, 8 warps and HOLD_EXPS) and HOLD_EXPS in fp32, against 01ead5a (.ab/old): GPU tests of kernels_triton's cluster/softmax/accuracy; lab bench in turns, two rounds
R=$OUT/d; mkdir -p $R; A=measurements/2026-11-27-h100/cluster-reread/probes
git log --oneline -1 > $R/d-env.txt; git status --short >> $R/d-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/d-env.txt
python3 -c "import torch, triton, cupy; print(torch.__version__, triton.__version__, cupy.__version__)" >> $R/d-env.txt
start=$(date +%s); timeout 250 scripts/test-in-place tests/kernels_triton/test_cluster.py tests/kernels_triton/test_triton_softmax.py tests/kernels_triton/test_triton_accuracy.py -m gpu -q -p no:cacheprovider -rfE > $R/d-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/d-stages.txt
F=1x131072,16x131072,32x131072,16x65536,64x65536,64x50257,16x262144,32x262144,64x131072,128x65536,256x262144,1024x131072,2048x65536,4096x32768,2048x50257
for r in 1 2; do
  for v in old new; do
    if [ $v = new ]; then P=scripts/in_place.py; else P=.ab/$v/scripts/in_place.py; fi
    timeout 120 python3 $P lab bench softmax --impls triton.softmax --shapes $F --dtypes float32,bfloat16 --time-cap 0.3 --json $R/d-ab-$v-fwd-$r.json > $R/d-ab-$v-fwd-$r.log 2>&1
    echo "ab $v $r rc=$? $(date +%T)" >> $R/d-stages.txt
  done
done
python3 $A/ab_trees.py $R d old new > $R/d-ab-summary.txt 2>&1
cat $R/d-stages.txt; tail -1 $R/d-tests.log; grep -E "FAILED|ERROR" $R/d-tests.log | head -8; cat $R/d-ab-summary.txt
cd $OUT && tar czf d.tgz d && rm -rf d
