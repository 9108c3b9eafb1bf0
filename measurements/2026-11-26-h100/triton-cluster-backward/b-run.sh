# call b (after the power-of-two cluster fix; carries the first part of the peers' wheels to ~/peers): the Triton backward over thread-block clusters (kernels_triton/cluster.py, working tree) against HEAD (.ab/old): GPU tests of kernels_triton, minigpt_torch and labtools; lab bench softmax_backward, old and new in turns, two rounds
R=$OUT/b; mkdir -p $R
mkdir -p ~/peers; cp .whl/p1/* ~/peers/
git log --oneline -1 > $R/b-env.txt; git status --short >> $R/b-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/b-env.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/b-env.txt
start=$(date +%s); scripts/test-in-place tests/kernels_triton tests/minigpt_torch tests/labtools -m gpu -q -p no:cacheprovider -rfE > $R/b-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/b-stages.txt
S=1024x131072,256x262144,4096x32768,2048x65536,16x131072,8x128257,64x50257,65536x600
for r in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=.ab/old/scripts/in_place.py; else P=scripts/in_place.py; fi
    timeout 100 python3 $P lab bench softmax_backward --impls triton.softmax_backward --shapes $S --dtypes float32,bfloat16 --time-cap 0.3 --json $R/b-ab-$v-bwd-$r.json > $R/b-ab-$v-bwd-$r.log 2>&1
    echo "ab $v bwd $r rc=$? $(date +%T)" >> $R/b-stages.txt
  done
done
cat $R/b-stages.txt; tail -3 $R/b-tests-gpu.log; grep -E "FAILED|ERROR" $R/b-tests-gpu.log | head -10
cd $OUT && tar czf b.tgz b && rm -rf b
