# call a: ncu of kernels_triton's and kernels_cuda's forward where kernels_triton trails QuACK or 95% of copy at 98f10de's package code (78b1b37's)
R=$OUT/a; mkdir -p $R
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt
start=$(date +%s); timeout 200 python3 scripts/in_place.py lab ncu --impl triton.softmax,cuda.auto --shape 256x262144,16x131072 --dtype float32,bfloat16 --out $R/ncu-fwd > $R/a-ncu-fwd.log 2>&1; echo "ncu rc=$? $(( $(date +%s) - start )) s" >> $R/a-stages.txt
rm -f $R/ncu-fwd/*.ncu-rep; cat $R/a-stages.txt; tail -22 $R/a-ncu-fwd.log
