# call d (carries the fourth part of the peers' wheels and .whl/p3b; run as `mkdir -p ~/peers && cp .whl/p3b/* ~/peers/ && bash d-run.sh`): the peers installed in ~/peers/site; ncu of kernels_triton, kernels_cuda and QuACK at 4096x600, both directions, fp32 and bf16, with the instruction and scheduler sections
R=$OUT/d; mkdir -p $R; P=~/peers
cp .whl/p4/* $P/; cd $P && cat cu13.part.aa cu13.part.ab cu13.part.ac > nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl && echo "$(cat cu13.sha256)  nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl" | sha256sum -c > $R/d-peers-install.log 2>&1
pip install --no-deps --target $P/site $P/*.whl >> $R/d-peers-install.log 2>&1; echo "pip rc=$?" >> $R/d-peers-install.log
cd - > /dev/null
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/d-env.txt
I=triton.softmax,cuda.auto,quack.softmax,triton.softmax_backward,cuda.softmax_backward,quack.softmax_backward
S="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section InstructionStats --section SchedulerStats"
timeout 300 python3 scripts/in_place.py lab ncu --impl $I --shape 4096x600 --dtype float32,bfloat16 $S --out $R/ncu > $R/d-ncu.log 2>&1; echo "ncu rc=$?" >> $R/d-stages.txt
rm -f $R/ncu/*.ncu-rep; cat $R/d-stages.txt; tail -2 $R/d-peers-install.log; tail -28 $R/d-ncu.log
cd $OUT && tar czf d.tgz d && rm -rf d
