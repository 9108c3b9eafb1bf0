# call q (carries the first part of the peers' wheels): every GPU test at the final tree; the fp32 cluster forward's error beside torch's over 40 inputs a form; lab bench of kernels_triton's fp32 forward against 45057cc (.ab/old: 1 / S by div.full), in turns
R=$OUT/q; mkdir -p $R; mkdir -p ~/peers; cp .whl/p1/* ~/peers/
git log --oneline -1 > $R/q-env.txt; git status --short >> $R/q-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/q-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/q-env.txt
start=$(date +%s); timeout 540 scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/q-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/q-stages.txt
cat $R/q-stages.txt; tail -2 $R/q-tests-gpu.log; grep -E "FAILED|ERROR" $R/q-tests-gpu.log | head
timeout 100 python3 scripts/in_place.py python measurements/2026-11-27-h100/held-exps/probes/error_vs_torch.py 8x131072,16x131072,64x50257,4x262144 40 > $R/q-error.log 2>&1; echo "error rc=$?" >> $R/q-stages.txt; cat $R/q-error.log
F=16x131072,64x50257,1024x131072,256x262144,512x50257,2048x65536
for r in 1 2; do
  for v in old new; do
    if [ $v = new ]; then P=scripts/in_place.py; else P=.ab/$v/scripts/in_place.py; fi
    timeout 100 python3 $P lab bench softmax --impls triton.softmax --shapes $F --dtypes float32 --time-cap 0.3 --json $R/q-ab-$v-fwd-$r.json > $R/q-ab-$v-fwd-$r.log 2>&1
    echo "ab $v $r rc=$? $(date +%T)" >> $R/q-stages.txt
  done
done
python3 measurements/2026-11-27-h100/cluster-reread/probes/ab_trees.py $R q old new > $R/q-ab-summary.txt 2>&1; cat $R/q-ab-summary.txt
cd $OUT && tar czf q.tgz q && rm -rf q
