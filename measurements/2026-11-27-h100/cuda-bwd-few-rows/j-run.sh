# call j: kernels_cuda's backward takes 16-block clusters where 8-block ones would leave one fp32 block an SM, in launches of up to 128 rows (BackwardConfig.lone_block_rows_f32; working tree), against HEAD (.ab/old): GPU tests of the backward; lab bench in turns, two rounds
R=$OUT/j; mkdir -p $R; A=measurements/2026-11-27-h100/cluster-reread/probes
git log --oneline -1 > $R/j-env.txt; git status --short >> $R/j-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/j-env.txt
python3 -c "import torch, triton, cupy; print(torch.__version__, triton.__version__, cupy.__version__)" >> $R/j-env.txt
start=$(date +%s); timeout 200 scripts/test-in-place tests/kernels_cuda/test_cuda_backward.py -m gpu -q -p no:cacheprovider -rfE > $R/j-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/j-stages.txt
F=1x131072,8x131072,16x131072,32x131072,64x131072,128x131072,256x131072,1024x131072,16x120000,16x65536
for r in 1 2; do
  for v in old new; do
    if [ $v = new ]; then P=scripts/in_place.py; else P=.ab/$v/scripts/in_place.py; fi
    timeout 120 python3 $P lab bench softmax_backward --impls cuda.softmax_backward --shapes $F --dtypes float32 --time-cap 0.3 --json $R/j-ab-$v-bwd-$r.json > $R/j-ab-$v-bwd-$r.log 2>&1
    echo "ab $v $r rc=$? $(date +%T)" >> $R/j-stages.txt
  done
done
python3 $A/ab_trees.py $R j old new > $R/j-ab-summary.txt 2>&1
cat $R/j-stages.txt; tail -1 $R/j-tests.log; grep -E "FAILED|ERROR" $R/j-tests.log | head -8; cat $R/j-ab-summary.txt
cd $OUT && tar czf j.tgz j && rm -rf j
