# call a (carries .before-tree: git archive of e2380e8's packages, scripts and probes): the GPU tests
# the change touches, then the probe's timings with the tree before (e2380e8) and after, twice in turns
R=$OUT/a; mkdir -p $R; D=measurements/2026-11-27-h100/lean-exp
nvidia-smi --query-gpu=name,driver_version,serial --format=csv,noheader > $R/a-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/a-env.txt
start=$(date +%s); timeout 200 scripts/test-in-place tests/kernels_triton/test_triton_accuracy.py tests/kernels_triton/test_triton_softmax.py tests/kernels_cuda/test_cuda_softmax.py -m gpu -q -p no:cacheprovider -rfE > $R/a-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/a-stages.txt
for turn in 1 2; do
  (cd .before-tree && timeout 150 python3 scripts/in_place.py python $D/probes/lean_exp.py time 5 > $R/a-before-$turn.log 2>&1); echo "before $turn rc=$? $(date +%T)" >> $R/a-stages.txt
  timeout 150 python3 scripts/in_place.py python $D/probes/lean_exp.py time 5 > $R/a-after-$turn.log 2>&1; echo "after $turn rc=$? $(date +%T)" >> $R/a-stages.txt
done
cat $R/a-stages.txt $R/a-env.txt; tail -3 $R/a-tests.log; grep -E "FAILED|ERROR" $R/a-tests.log | head
for f in $R/a-before-1.log $R/a-after-1.log; do echo "== $f"; grep -E "^(fwd|bwd)|package|warp|cuda|qcubin|Error|error" $f | head -150; done
cd $OUT && tar czf a.tgz a && rm -rf a
