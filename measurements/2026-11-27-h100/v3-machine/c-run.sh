# call c: the GPU tests of the final packages' change (kernels_triton's warp-a-row kernels, the bf16
# stress rows in both backends), then v3 at 32768x1024 fp32 timed as in call b and held for seconds
# back to back against QuACK's cubin and kernels_triton, with nvidia-smi logging SM clock and power
R=$OUT/c; mkdir -p $R; V=measurements/2026-11-27-h100/v3-machine
nvidia-smi --query-gpu=name,driver_version,serial,power.limit,clocks.max.sm --format=csv,noheader > $R/c-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/c-env.txt
start=$(date +%s); timeout 200 scripts/test-in-place tests/kernels_triton/test_triton_accuracy.py tests/kernels_triton/test_triton_softmax.py tests/kernels_cuda/test_cuda_softmax.py -m gpu -q -p no:cacheprovider -rfE > $R/c-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/c-stages.txt
timeout 150 python3 scripts/in_place.py python $V/probes/v3_long.py time 5 > $R/c-v3-time.log 2>&1; echo "v3 time rc=$?" >> $R/c-stages.txt
F=clocks_event_reasons.active; nvidia-smi --query-gpu=$F --format=csv > /dev/null 2>&1 || F=clocks_throttle_reasons.active
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,$F --format=csv -lms 100 > $R/c-smi.csv 2>&1 &
SMI=$!
timeout 120 python3 scripts/in_place.py python $V/probes/v3_long.py sustain 4 > $R/c-sustain.log 2>&1; echo "sustain rc=$?" >> $R/c-stages.txt
kill $SMI
cat $R/c-stages.txt $R/c-env.txt; tail -2 $R/c-tests.log; grep -E "FAILED|ERROR" $R/c-tests.log | head; cat $R/c-v3-time.log $R/c-sustain.log; wc -l $R/c-smi.csv
cd $OUT && tar czf c.tgz c && rm -rf c
