# call e (carries the first part of the peers' wheels to ~/peers): after cluster.takes(), the dispatch's one decision for both directions: GPU tests of every package
R=$OUT/e; mkdir -p $R
mkdir -p ~/peers; cp .whl/p1/* ~/peers/
git log --oneline -1 > $R/e-env.txt; git status --short >> $R/e-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/e-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/e-env.txt
start=$(date +%s); timeout 400 scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/e-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/e-stages.txt
cat $R/e-stages.txt; tail -2 $R/e-tests-gpu.log; grep -E "FAILED|ERROR" $R/e-tests-gpu.log | head
cd $OUT && tar czf e.tgz e && rm -rf e
