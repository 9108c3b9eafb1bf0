# call n (tree 60ad1db): every GPU test at the final packages
R=$OUT/n; mkdir -p $R
echo "tree 60ad1db" > $R/n-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/n-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/n-env.txt
start=$(date +%s); timeout 450 scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/n-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/n-env.txt
cat $R/n-env.txt; tail -2 $R/n-tests-gpu.log; grep -E "FAILED|ERROR" $R/n-tests-gpu.log | head
cd $OUT && tar czf n.tgz n && rm -rf n
