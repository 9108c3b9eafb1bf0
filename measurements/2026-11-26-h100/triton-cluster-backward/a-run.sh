# call a: the Triton backward over thread-block clusters (kernels_triton/cluster.py, working tree) against HEAD (.ab/old): GPU tests of kernels_triton, minigpt_torch and labtools; lab bench softmax_backward, old and new in turns, two rounds
R=$OUT/a; mkdir -p $R
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/a-env.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/a-env.txt
start=$(date +%s); scripts/test-in-place tests/kernels_triton tests/minigpt_torch tests/labtools -m gpu -q -p no:cacheprovider -rfE > $R/a-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/a-stages.txt
S=1024x131072,256x262144,4096x32768,2048x65536,16x131072,8x128257,64x50257,65536x600
for r in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=.ab/old/scripts/in_place.py; else P=scripts/in_place.py; fi
    timeout 100 python3 $P lab bench softmax_backward --impls triton.softmax_backward --shapes $S --dtypes float32,bfloat16 --time-cap 0.3 --json $R/a-ab-$v-bwd-$r.json > $R/a-ab-$v-bwd-$r.log 2>&1
    echo "ab $v bwd $r rc=$? $(date +%T)" >> $R/a-stages.txt
  done
done
cat $R/a-stages.txt; tail -3 $R/a-tests-gpu.log; grep -E "FAILED|ERROR" $R/a-tests-gpu.log | head -10
cd $OUT && tar czf a.tgz a && rm -rf a
