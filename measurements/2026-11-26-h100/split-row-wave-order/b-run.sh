# call b: the split-row forward loading two rows ahead (probes/wave_depth.py), at 8192 / 4 warps and 4096 / 4 warps
R=$OUT/b; mkdir -p $R; D=$PWD/measurements/2026-11-26-h100/split-row-wave-order
git log --oneline -1 > $R/b-env.txt; git status --short >> $R/b-env.txt
timeout 420 python3 scripts/in_place.py python $D/probes/wave_depth.py > $R/b-wave-depth.log 2>&1; echo "probe rc=$?" >> $R/b-stages.txt
cat $R/b-stages.txt; grep -v -i warn $R/b-wave-depth.log | tail -12
cd $OUT && tar czf b.tgz b && rm -rf b
