# call a: kernels_triton's one-pass kernels with a warp a row (probes/warp_rows.py) beside the package's launch, kernels_cuda's and QuACK's cubin, rows of 600
R=$OUT/a; mkdir -p $R; D=measurements/2026-11-27-h100/warp-rows
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/a-env.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/a-env.txt
timeout 500 python3 scripts/in_place.py python $D/probes/warp_rows.py time 7 > $R/a-probe.log 2>&1; echo "probe rc=$? $(date +%T)" >> $R/a-stages.txt
cat $R/a-stages.txt; grep -v "^checking" $R/a-probe.log | tail -150
cd $OUT && tar czf a.tgz a && rm -rf a
