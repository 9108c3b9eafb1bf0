# call a (carries the first part of the peers' wheels): kernels_triton's 16-bit cluster forward reducing (max, sum) pairs once (working tree) against c9c888e (.ab/old: a max, then a sum): GPU tests of kernels_triton's cluster, softmax and accuracy files; lab bench in turns, three rounds, bf16
R=$OUT/a; mkdir -p $R; mkdir -p ~/peers; cp .whl/p1/* ~/peers/; A=measurements/2026-11-27-h100/cluster-reread/probes
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/a-env.txt
python3 -c "import torch, triton, cupy; print(torch.__version__, triton.__version__, cupy.__version__)" >> $R/a-env.txt
start=$(date +%s); timeout 250 scripts/test-in-place tests/kernels_triton/test_cluster.py tests/kernels_triton/test_triton_softmax.py tests/kernels_triton/test_triton_accuracy.py -m gpu -q -p no:cacheprovider -rfE > $R/a-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/a-stages.txt
F=1x131072,16x131072,32x131072,16x65536,64x65536,64x50257,16x262144,32x262144,64x131072,128x65536,256x262144,512x200000,1024x131072,2048x65536,4096x32768,2048x50257
for r in 1 2 3; do
  for v in old new; do
    if [ $v = new ]; then P=scripts/in_place.py; else P=$PWD/.ab/$v/scripts/in_place.py; fi
    timeout 100 python3 $P lab bench softmax --impls triton.softmax --shapes $F --dtypes bfloat16 --time-cap 0.3 --json $R/a-ab-$v-fwd-$r.json > $R/a-ab-$v-fwd-$r.log 2>&1
    echo "ab $v $r rc=$? $(date +%T)" >> $R/a-stages.txt
  done
done
python3 $A/ab_trees.py $R a old new > $R/a-ab-summary.txt 2>&1
cat $R/a-stages.txt; tail -1 $R/a-tests.log; grep -E "FAILED|ERROR" $R/a-tests.log | head -8; cat $R/a-ab-summary.txt
cd $OUT && tar czf a.tgz a && rm -rf a
