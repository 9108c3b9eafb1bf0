# call c (tree c401f70, packages as cd52683): the GPU tests outside tests/kernels_cuda that reach kernels_cuda (labtools' registry, sweeps and roofline; the Triton/CUDA C cross-check; the in-place script)
R=$OUT/c; mkdir -p $R
git log --oneline -1 > $R/c-env.txt; git status --short >> $R/c-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/c-env.txt
start=$(date +%s); timeout 220 scripts/test-in-place tests/labtools tests/minigpt_np/test_in_place_script.py tests/packaging "tests/kernels_triton/test_triton_softmax.py::test_gpu_agrees_with_the_cuda_c_kernels" -m gpu -q -p no:cacheprovider -rfE > $R/c-tests.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/c-stages.txt
cat $R/c-stages.txt; tail -2 $R/c-tests.log; grep -E "FAILED|ERROR" $R/c-tests.log | head
cd $OUT && tar czf c.tgz c && rm -rf c
