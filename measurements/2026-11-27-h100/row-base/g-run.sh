# call g: the variants probe --bwd (the fused backward's few-rows launches at 5 and 8 packs a thread, FULL or not)
R=$OUT/g; mkdir -p $R; D=measurements/2026-11-27-h100/row-base
git log -1 --format="tree %h" > $R/g-env.txt 2>/dev/null; git status --short >> $R/g-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/g-env.txt
timeout 330 python3 scripts/in_place.py python $D/probes/variants.py --bwd > $R/g-bwd.log 2>&1; echo "probe rc=$?" >> $R/g-env.txt
cat $R/g-env.txt; grep -v "^checking" $R/g-bwd.log | tail -150
cd $OUT && tar czf g.tgz g && rm -rf g
