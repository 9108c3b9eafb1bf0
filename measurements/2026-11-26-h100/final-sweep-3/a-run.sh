# call a: the first part of the peers' wheels to ~/peers; every package's GPU tests at 64fca36 (package code as 1e1b17d)
R=$OUT/a; mkdir -p $R; P=~/peers; mkdir -p $P; cp .whl/p1/* $P/
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/a-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/a-env.txt
start=$(date +%s); scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/a-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/a-stages.txt
cat $R/a-stages.txt; tail -3 $R/a-tests-gpu.log; ls $P
cd $OUT && tar czf a.tgz a && rm -rf a
