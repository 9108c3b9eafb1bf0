# call a: kernels_cuda.tune (v3 16-bit candidates with exponentials held in fp32 registers or taken again), two rounds
R=$OUT/a; mkdir -p $R
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/a-env.txt
S=4096x600,65536x600,262144x600,32768x1024,16384x4096,8192x8192,4096x32768,1024x2048
for r in 1 2; do
  timeout 250 python3 scripts/in_place.py python -m kernels_cuda.tune --shapes $S --dtypes bfloat16 --time-cap 0.3 --json $R/a-tune-$r.json > $R/a-tune-$r.log 2>&1
  echo "tune $r rc=$?" >> $R/a-stages.txt
done
cat $R/a-stages.txt; grep -c "WRONG" $R/a-tune-*.log
cd $OUT && tar czf a.tgz a && rm -rf a
