# call f: every package's GPU tests at the working tree; the first half of the peers' wheels into ~/peers
R=$OUT/f; mkdir -p $R ~/peers
cp .whl/a/* ~/peers/; ls -la ~/peers > $R/f-peers-part1.txt
git log --oneline -1 > $R/f-env.txt; git status --short >> $R/f-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/f-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/f-env.txt
scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/f-tests-gpu.log 2>&1; echo "tests rc=$?" >> $R/f-tests-gpu.log
tail -4 $R/f-tests-gpu.log
cd $OUT && tar czf f.tgz f && rm -rf f
