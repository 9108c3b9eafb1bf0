# call d: .probes/short_rows.py: CUDA v3 forward and 06 backward at rows of 600 over threads a row, packs a thread and rows a block; 04 at long rows over threads a block
R=$OUT/d; mkdir -p $R
git log --oneline -1 > $R/d-env.txt; git status --short >> $R/d-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/d-env.txt
timeout 400 python3 scripts/in_place.py python .probes/short_rows.py > $R/d-short-rows.log 2>&1; echo "probe rc=$?" >> $R/d-stages.txt
cat $R/d-stages.txt; cat $R/d-short-rows.log | tail -20
cd $OUT && tar czf d.tgz d && rm -rf d
