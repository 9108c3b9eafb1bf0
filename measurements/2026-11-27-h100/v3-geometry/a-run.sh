# call a: kernels_cuda's v3 forward at other threads a row and packs a thread (probes/geometry.py), fp32 rows of 600-8192 and bf16 1024-8192, beside kernels_triton
R=$OUT/a; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/a-env.txt
timeout 500 python3 scripts/in_place.py python measurements/2026-11-27-h100/v3-geometry/probes/geometry.py > $R/a-probe.log 2>&1; echo "probe rc=$? $(date +%T)" >> $R/a-stages.txt
cat $R/a-stages.txt; grep -v "^checking" $R/a-probe.log | tail -90
cd $OUT && tar czf a.tgz a && rm -rf a
