# call b (carries .before-tree, as lean-exp's call a; the same machine, warm): lean-exp's forms under ncu
# (duration, executed instructions) before and after; then v3 against kernels_triton and QuACK's cubin
# at long fp32 rows, timed and under ncu, on this machine
R=$OUT/b; mkdir -p $R; L=measurements/2026-11-27-h100/lean-exp; V=measurements/2026-11-27-h100/v3-machine
nvidia-smi --query-gpu=name,driver_version,serial,clocks.max.sm,clocks.max.mem --format=csv,noheader > $R/b-env.txt
M="--metrics gpu__time_duration.sum,smsp__inst_executed.sum,launch__grid_size,launch__block_size,sm__warps_active.avg.pct_of_peak_sustained_active"
(cd .before-tree && timeout 120 ncu --target-processes all --profile-from-start off $M --csv python3 scripts/in_place.py python $L/probes/lean_exp.py ncu > $R/b-lean-ncu-before.csv 2>&1); echo "lean ncu before rc=$?" >> $R/b-stages.txt
timeout 120 ncu --target-processes all --profile-from-start off $M --csv python3 scripts/in_place.py python $L/probes/lean_exp.py ncu > $R/b-lean-ncu-after.csv 2>&1; echo "lean ncu after rc=$?" >> $R/b-stages.txt
timeout 150 python3 scripts/in_place.py python $V/probes/v3_long.py time 5 > $R/b-v3-time.log 2>&1; echo "v3 time rc=$?" >> $R/b-stages.txt
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section InstructionStats --section SchedulerStats"
timeout 150 ncu --target-processes all --profile-from-start off $S --csv --page details python3 scripts/in_place.py python $V/probes/v3_long.py ncu > $R/b-v3-ncu.csv 2>&1; echo "v3 ncu rc=$?" >> $R/b-stages.txt
cat $R/b-stages.txt $R/b-env.txt; cat $R/b-v3-time.log
for f in $R/b-lean-ncu-before.csv $R/b-lean-ncu-after.csv; do echo "== $f"; grep -E "^launch|gpu__time_duration|smsp__inst_executed" $f | awk -F'","' '{print $1" | "$5" | "$(NF-2)" | "$NF}' | cut -c1-160 | head -60; done
grep -E "^launch" $R/b-v3-ncu.csv; grep -E "Duration|DRAM Throughput|Executed Instructions\"|Achieved Occupancy" $R/b-v3-ncu.csv | awk -F'","' '{print $1" | "$5" | "$(NF-3)" | "$NF}' | cut -c1-150 | head -40
cd $OUT && tar czf b.tgz b && rm -rf b
