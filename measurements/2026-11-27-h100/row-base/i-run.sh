# call i: the variants probe --bwd3 (the tree's backward with y and dy staged in shared memory by cp.async.ca, QuACK's load path)
R=$OUT/i; mkdir -p $R; D=measurements/2026-11-27-h100/row-base
git log -1 --format="tree %h" > $R/i-env.txt 2>/dev/null; git status --short >> $R/i-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/i-env.txt
timeout 330 python3 scripts/in_place.py python $D/probes/variants.py --bwd3 > $R/i-bwd3.log 2>&1; echo "probe rc=$?" >> $R/i-env.txt
cat $R/i-env.txt; grep -v "^checking" $R/i-bwd3.log | tail -150
cd $OUT && tar czf i.tgz i && rm -rf i
