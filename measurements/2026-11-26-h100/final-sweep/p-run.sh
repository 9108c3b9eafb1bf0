# call p: every package's GPU tests at the working tree (the driver's shared-memory opt-in fix), and the first half of the peers' wheels into ~/peers
R=$OUT/r; mkdir -p $R ~/peers
cp .whl/a/* ~/peers/; ls -la ~/peers > $R/p-peers-part1.txt
git log --oneline -1 > $R/p-env.txt; git status --short >> $R/p-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/p-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/p-env.txt
scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/p-tests-gpu.log 2>&1; echo "tests rc=$?" >> $R/p-tests-gpu.log
tail -4 $R/p-tests-gpu.log
