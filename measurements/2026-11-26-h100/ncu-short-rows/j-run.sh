# call j: the peers installed; ncu of kernels_cuda, kernels_triton and QuACK at 4096x600, forward and backward, with instruction statistics
R=$OUT/j; mkdir -p $R; P=~/peers
cp .whl/p3/* $P/; cd $P && cat cu13.part.aa cu13.part.ab cu13.part.ac > nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl && echo "$(cat cu13.sha256)  nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl" | sha256sum -c > $R/j-peers-install.log 2>&1
pip install --no-deps --target $P/site $P/*.whl >> $R/j-peers-install.log 2>&1; echo "pip rc=$?" >> $R/j-peers-install.log
cd - > /dev/null
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
git log --oneline -1 > $R/j-env.txt; git status --short >> $R/j-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/j-env.txt
SEC="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section InstructionStats --section SchedulerStats"
timeout 150 python3 scripts/in_place.py lab ncu --impl cuda.auto,quack.softmax,triton.softmax --shape 4096x600 --dtype float32,bfloat16 $SEC --out $R/ncu-fwd-600 > $R/j-ncu-fwd.log 2>&1; echo "ncu fwd rc=$?" >> $R/j-stages.txt
timeout 150 python3 scripts/in_place.py lab ncu --impl cuda.softmax_backward,quack.softmax_backward,triton.softmax_backward --shape 4096x600 --dtype float32,bfloat16 $SEC --out $R/ncu-bwd-600 > $R/j-ncu-bwd.log 2>&1; echo "ncu bwd rc=$?" >> $R/j-stages.txt
rm -f $R/ncu-*/*.ncu-rep
cat $R/j-stages.txt; grep -A10 "^id " $R/j-ncu-fwd.log | head -12; grep -A10 "^id " $R/j-ncu-bwd.log | head -12
cd $OUT && tar czf j.tgz j && rm -rf j
