# call d (after calls a-c carried the first three parts of the peers' wheels; carries the fourth and .whl/p3b; run as `mkdir -p ~/peers && cp .whl/p3b/* ~/peers/ && bash d-run.sh`): the peers installed; lab bench of v3, kernels_triton and QuACK at fp32 rows of 1024-8192 in turns (which kind of machine?), then ncu of the three there
R=$OUT/d; mkdir -p $R; P=~/peers
cp .whl/p4/* $P/; cd $P && cat cu13.part.aa cu13.part.ab cu13.part.ac > nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl && echo "$(cat cu13.sha256)  nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl" | sha256sum -c > $R/d-peers-install.log 2>&1
pip install --no-deps --target $P/site $P/*.whl >> $R/d-peers-install.log 2>&1; echo "pip rc=$?" >> $R/d-peers-install.log
cd - > /dev/null
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
nvidia-smi --query-gpu=name,driver_version,serial --format=csv,noheader > $R/d-env.txt
S=32768x1024,16384x4096,8192x8192
timeout 150 python3 scripts/in_place.py lab bench softmax --shapes $S --dtypes float32 --impls cuda.auto,triton.softmax,quack.softmax --time-cap 0.3 --rounds 3 --json $R/d-bench.json > $R/d-bench.log 2>&1; echo "bench rc=$?" >> $R/d-stages.txt
timeout 200 python3 scripts/in_place.py lab ncu --impl cuda.auto,triton.softmax,quack.softmax --shape $S --dtype float32 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis --out $R/ncu > $R/d-ncu.log 2>&1; echo "ncu rc=$?" >> $R/d-stages.txt
rm -f $R/ncu/*.ncu-rep; cat $R/d-stages.txt $R/d-env.txt; grep -E "auto|Triton|QuACK" $R/d-bench.log | tail -12; tail -24 $R/d-ncu.log
cd $OUT && tar czf d.tgz d && rm -rf d
