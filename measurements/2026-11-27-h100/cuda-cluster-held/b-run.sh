# call b (tree cd52683): kernels_cuda's GPU tests; lab bench of cuda.auto's forward against 25f9eee (.ab/old: the chunk always in shared memory), in turns, three rounds
R=$OUT/b; mkdir -p $R; A=measurements/2026-11-27-h100/cluster-reread/probes
git log --oneline -1 > $R/b-env.txt; git status --short >> $R/b-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/b-env.txt
start=$(date +%s); timeout 200 scripts/test-in-place tests/kernels_cuda -m gpu -q -p no:cacheprovider -rfE > $R/b-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/b-stages.txt
F=1x131072,16x131072,32x131072,64x131072,128x65536,64x50257,2048x50257,300x147456,256x262144,1024x131072,2048x65536,4096x32768
for r in 1 2 3; do
  for v in old new; do
    if [ $v = new ]; then P=scripts/in_place.py; else P=$PWD/.ab/$v/scripts/in_place.py; fi
    timeout 60 python3 $P lab bench softmax --impls cuda.auto --shapes $F --dtypes float32,bfloat16 --time-cap 0.3 --json $R/b-ab-$v-fwd-$r.json > $R/b-ab-$v-fwd-$r.log 2>&1
    echo "ab $v $r rc=$? $(date +%T)" >> $R/b-stages.txt
  done
done
python3 $A/ab_trees.py $R b old new > $R/b-ab-summary.txt 2>&1
cat $R/b-stages.txt; tail -2 $R/b-tests.log; grep -E "FAILED|ERROR" $R/b-tests.log | head; cat $R/b-ab-summary.txt
cd $OUT && tar czf b.tgz b && rm -rf b
