# call a (carries the first part of the peers' wheels, .whl/p1): every GPU test
R=$OUT/a; mkdir -p $R; mkdir -p ~/peers; cp .whl/p1/* ~/peers/
nvidia-smi --query-gpu=name,driver_version,serial --format=csv,noheader > $R/a-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/a-env.txt
start=$(date +%s); timeout 560 scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfEs > $R/a-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/a-stages.txt
cat $R/a-stages.txt $R/a-env.txt; tail -2 $R/a-tests-gpu.log; grep -E "FAILED|ERROR" $R/a-tests-gpu.log | head
cd $OUT && tar czf a.tgz a && rm -rf a
