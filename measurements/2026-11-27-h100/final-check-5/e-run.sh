# call e (warm, the peers still in ~/peers/site): lab ncu of kernels_triton, kernels_cuda and QuACK, forward and backward, at the shapes and dtypes where call d found one of ours below QuACK or below 95% of copy (e-misses.txt: call d's JSON read by probes/misses.py)
R=$OUT/e; mkdir -p $R; P=~/peers
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
git log --oneline -1 > $R/e-env.txt; git status --short >> $R/e-env.txt
cp measurements/2026-11-27-h100/final-check-5/d-misses.txt $R/e-misses.txt
while read -r op dtype shapes; do
  if [ $op = softmax ]; then I=triton.softmax,cuda.auto,quack.softmax; d=fwd; else I=triton.softmax_backward,cuda.softmax_backward,quack.softmax_backward; d=bwd; fi
  start=$(date +%s); timeout 140 python3 scripts/in_place.py lab ncu --impl $I --shape $shapes --dtype $dtype --out $R/ncu-$d-$dtype > $R/e-ncu-$d-$dtype.log 2>&1 < /dev/null
  echo "ncu $d $dtype rc=$? $(( $(date +%s) - start )) s" >> $R/e-stages.txt
done < $R/e-misses.txt
rm -f $R/ncu-*/*.ncu-rep; cat $R/e-stages.txt; for f in $R/e-ncu-*.log; do echo "== $f"; tail -30 $f; done
cd $OUT && tar czf e.tgz e && rm -rf e
