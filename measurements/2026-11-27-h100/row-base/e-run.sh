# call e: the variants probe --async (the tree's 03 with its row staged in shared memory by cp.async, QuACK's load path, beside the tree and QuACK's cubin)
R=$OUT/e; mkdir -p $R; D=measurements/2026-11-27-h100/row-base
git log -1 --format="tree %h" > $R/e-env.txt 2>/dev/null; git status --short >> $R/e-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/e-env.txt
timeout 330 python3 scripts/in_place.py python $D/probes/variants.py --async > $R/e-async.log 2>&1; echo "probe rc=$?" >> $R/e-env.txt
cat $R/e-env.txt; grep -v "^checking" $R/e-async.log | tail -150
cd $OUT && tar czf e.tgz e && rm -rf e
