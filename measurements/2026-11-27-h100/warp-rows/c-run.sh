# call c (tree 3fd7c78): the package's warp-a-row launches (tuple-of-packs form) forced against its picks (probe b again), and kernels_triton's GPU tests of the form and its rule
R=$OUT/c; mkdir -p $R; D=measurements/2026-11-27-h100/warp-rows
echo "tree 3fd7c78" > $R/c-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/c-env.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/c-env.txt
start=$(date +%s); timeout 200 scripts/test-in-place tests/kernels_triton -m gpu -q -p no:cacheprovider -rfE -k "warp or committed_picks or compile or accuracy or error" > $R/c-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/c-stages.txt
timeout 300 python3 scripts/in_place.py python $D/probes/package_forms.py 7 > $R/c-probe.log 2>&1; echo "probe rc=$? $(date +%T)" >> $R/c-stages.txt
cat $R/c-stages.txt; tail -3 $R/c-tests.log; grep -E "FAILED|ERROR" $R/c-tests.log | head; grep -v "^checking" $R/c-probe.log | grep -E "^(fwd|bwd)|warp|picks" | tail -80
cd $OUT && tar czf c.tgz c && rm -rf c
