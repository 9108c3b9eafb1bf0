# call a: kernels_cuda's v3 and kernels_triton at fp32 rows of 1024-8192 where v3 trailed QuACK on one machine (final-check-13): lab bench in turns (which kind of machine is this?), then ncu of both
R=$OUT/a; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,serial --format=csv,noheader > $R/a-env.txt 2>&1
S=32768x1024,16384x4096,8192x8192
timeout 150 python3 scripts/in_place.py lab bench softmax --shapes $S --dtypes float32 --impls cuda.auto,triton.softmax --time-cap 0.3 --rounds 3 --json $R/a-bench.json > $R/a-bench.log 2>&1; echo "bench rc=$?" >> $R/a-stages.txt
timeout 200 python3 scripts/in_place.py lab ncu --impl cuda.auto,triton.softmax --shape $S --dtype float32 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis --out $R/ncu > $R/a-ncu.log 2>&1; echo "ncu rc=$?" >> $R/a-stages.txt
rm -f $R/ncu/*.ncu-rep; cat $R/a-stages.txt; tail -15 $R/a-bench.log; tail -14 $R/a-ncu.log
cd $OUT && tar czf a.tgz a && rm -rf a
