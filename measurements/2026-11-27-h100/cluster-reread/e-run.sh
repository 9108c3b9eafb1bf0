# call e: test_cluster at the committed st.async exchange; cluster_widths.py: the 16-bit forward over clusters at many-wave shapes, 262144 columns in 16 blocks of 16384 (both directions)
R=$OUT/e; mkdir -p $R; D=measurements/2026-11-27-h100/cluster-reread
git log --oneline -1 > $R/e-env.txt; git status --short >> $R/e-env.txt
start=$(date +%s); timeout 120 scripts/test-in-place tests/kernels_triton/test_cluster.py -m gpu -q -p no:cacheprovider -rfE > $R/e-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/e-stages.txt
P="timeout 150 python3 scripts/in_place.py python $D/probes/cluster_widths.py"
$P 1024x131072,2048x65536,512x65536,4096x32768,256x131072,256x262144 8192x4,16384x8 bfloat16 fwd > $R/e-fwd-bf16.log 2>&1; echo "fwd bf16 rc=$?" >> $R/e-stages.txt
$P 256x262144 16384x8,16384x16 float32 fwd > $R/e-fwd-fp32.log 2>&1; echo "fwd fp32 rc=$?" >> $R/e-stages.txt
$P 256x262144,1024x131072 8192x4,16384x8,16384x16 float32,bfloat16 bwd > $R/e-bwd.log 2>&1; echo "bwd rc=$?" >> $R/e-stages.txt
cat $R/e-stages.txt; tail -1 $R/e-tests.log; grep -E "FAILED|ERROR" $R/e-tests.log | head -5; cat $R/e-fwd-bf16.log $R/e-fwd-fp32.log $R/e-bwd.log
