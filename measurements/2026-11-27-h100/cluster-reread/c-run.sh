# call c: the cluster forward at other chunk widths and warps (cluster_widths.py); ncu of kernels_triton's and kernels_cuda's forward at the long-row shapes where kernels_triton trails
R=$OUT/c; mkdir -p $R; D=measurements/2026-11-27-h100/cluster-reread
git log --oneline -1 > $R/c-env.txt; git status --short >> $R/c-env.txt
start=$(date +%s); timeout 240 python3 scripts/in_place.py python $D/probes/cluster_widths.py > $R/c-widths.log 2>&1; echo "widths rc=$? $(( $(date +%s) - start )) s" >> $R/c-stages.txt
start=$(date +%s); timeout 240 python3 scripts/in_place.py lab ncu --impl triton.softmax,cuda.auto --shape 1024x131072,2048x65536,256x262144 --dtype float32,bfloat16 --out $R/ncu-fwd > $R/c-ncu-fwd.log 2>&1; echo "ncu rc=$? $(( $(date +%s) - start )) s" >> $R/c-stages.txt
cat $R/c-stages.txt; cat $R/c-widths.log; tail -40 $R/c-ncu-fwd.log
