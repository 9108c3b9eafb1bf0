# call d (carries .before-tree, e2380e8's packages): kernels_cuda's GPU tests of the lean ladder launches
# (FULL on ladder rungs, one exponential a warp in the row merge), then v3 before / after at long rows,
# timed in turns of trees, held back to back with nvidia-smi's clock and power log, and after under ncu
R=$OUT/d; mkdir -p $R; V=measurements/2026-11-27-h100/v3-machine
nvidia-smi --query-gpu=name,driver_version,serial,power.limit,clocks.max.sm --format=csv,noheader > $R/d-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/d-env.txt
start=$(date +%s); timeout 260 scripts/test-in-place tests/kernels_cuda -m gpu -q -p no:cacheprovider -rfE -x > $R/d-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/d-stages.txt
for turn in 1 2; do
  (cd .before-tree && timeout 100 python3 scripts/in_place.py python $V/probes/v3_long.py time 4 > $R/d-before-$turn.log 2>&1); echo "before $turn rc=$? $(date +%T)" >> $R/d-stages.txt
  timeout 100 python3 scripts/in_place.py python $V/probes/v3_long.py time 4 > $R/d-after-$turn.log 2>&1; echo "after $turn rc=$? $(date +%T)" >> $R/d-stages.txt
done
F=clocks_event_reasons.active; nvidia-smi --query-gpu=$F --format=csv > /dev/null 2>&1 || F=clocks_throttle_reasons.active
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,$F --format=csv -lms 100 > $R/d-smi.csv 2>&1 &
SMI=$!
(cd .before-tree && timeout 60 python3 scripts/in_place.py python $V/probes/v3_long.py sustain 3 > $R/d-sustain-before.log 2>&1); echo "sustain before rc=$?" >> $R/d-stages.txt
timeout 60 python3 scripts/in_place.py python $V/probes/v3_long.py sustain 3 > $R/d-sustain-after.log 2>&1; echo "sustain after rc=$?" >> $R/d-stages.txt
kill $SMI
M="--metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size,launch__registers_per_thread"
timeout 100 ncu --target-processes all --profile-from-start off $M --csv python3 scripts/in_place.py python $V/probes/v3_long.py ncu > $R/d-ncu-after.csv 2>&1; echo "ncu after rc=$?" >> $R/d-stages.txt
(cd .before-tree && timeout 100 ncu --target-processes all --profile-from-start off $M --csv python3 scripts/in_place.py python $V/probes/v3_long.py ncu > $R/d-ncu-before.csv 2>&1); echo "ncu before rc=$?" >> $R/d-stages.txt
cat $R/d-stages.txt $R/d-env.txt; tail -2 $R/d-tests.log; grep -E "FAILED|ERROR" $R/d-tests.log | head
for t in 1 2; do paste <(grep -E "^fwd|^ +(triton|cuda|qcubin|copy) " $R/d-before-$t.log) <(grep -E "^fwd|^ +(triton|cuda|qcubin|copy) " $R/d-after-$t.log) | cut -c1-150; done
cat $R/d-sustain-before.log $R/d-sustain-after.log
cd $OUT && tar czf d.tgz d && rm -rf d
