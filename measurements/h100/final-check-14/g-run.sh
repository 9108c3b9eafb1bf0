# call g (another machine, after the review's mend 1a228b1: FULL from one function, plans unchanged): every GPU test at the final head
R=$OUT/g; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,serial --format=csv,noheader > $R/g-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/g-env.txt
start=$(date +%s); timeout 560 scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfEs > $R/g-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/g-stages.txt
cat $R/g-stages.txt $R/g-env.txt; tail -2 $R/g-tests-gpu.log; grep -E "FAILED|ERROR" $R/g-tests-gpu.log | head
cd $OUT && tar czf g.tgz g && rm -rf g
