# call b: the package's warp-a-row form forced against its picks (the rule switched off), kernels_cuda and QuACK's cubin, 2304-8192 rows of 600-2048
R=$OUT/b; mkdir -p $R; D=measurements/2026-11-27-h100/warp-rows
git log --oneline -1 > $R/b-env.txt; git status --short >> $R/b-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/b-env.txt
timeout 500 python3 scripts/in_place.py python $D/probes/package_forms.py 7 > $R/b-probe.log 2>&1; echo "probe rc=$? $(date +%T)" >> $R/b-stages.txt
cat $R/b-stages.txt; grep -v "^checking" $R/b-probe.log | tail -200
cd $OUT && tar czf b.tgz b && rm -rf b
