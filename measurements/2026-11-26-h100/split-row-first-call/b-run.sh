mkdir -p $OUT/r
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import sys,torch,triton;print(sys.version.split()[0],'torch',torch.__version__,'triton',triton.__version__)"; } > $OUT/r/env.txt 2>&1
K=packages/kernels-triton/src/kernels_triton
s=$(date +%s); timeout 300 scripts/test-in-place tests/kernels_triton -m gpu -q -p no:cacheprovider -rfE > $OUT/r/tests-triton-gpu.log 2>&1; echo "tests-triton-gpu rc=$? $(( $(date +%s) - s ))s" >> $OUT/r/stages.txt
for v in new old; do
  if [ $v = old ]; then cp .old/old/*.py $K/; fi
  C=$(mktemp -d)
  for i in cold warm-1 warm-2; do echo -n "$v $i: " >> $OUT/r/first-call.log; TRITON_CACHE_DIR=$C timeout 120 python3 scripts/in_place.py python .probes/first_call.py >> $OUT/r/first-call.log 2>&1; done
done
s=$(date +%s); timeout 200 scripts/test-in-place tests/kernels_triton/test_compiled_index.py -m gpu -q -p no:cacheprovider -rfE -k split_row > $OUT/r/test-split-index-on-old-code.log 2>&1; echo "test-split-index-on-old-code rc=$? (must fail) $(( $(date +%s) - s ))s" >> $OUT/r/stages.txt
cp .old/new/*.py $K/
cat $OUT/r/stages.txt; tail -3 $OUT/r/tests-triton-gpu.log; cat $OUT/r/first-call.log; tail -3 $OUT/r/test-split-index-on-old-code.log
