# call c: probes/rows_crossover.py, the cluster forward against the other kernels by row count (device and call time), at the working tree's package code
R=$OUT/c; mkdir -p $R; D=measurements/2026-11-26-h100/triton-cluster-forward
git log --oneline -1 > $R/c-env.txt; git status --short >> $R/c-env.txt
start=$(date +%s); timeout 500 python3 scripts/in_place.py python $D/probes/rows_crossover.py > $R/c-rows-crossover.log 2>&1; echo "probe rc=$? $(( $(date +%s) - start )) s" >> $R/c-stages.txt
cat $R/c-stages.txt; grep -v -i warn $R/c-rows-crossover.log | tail -45
cd $OUT && tar czf c.tgz c && rm -rf c
