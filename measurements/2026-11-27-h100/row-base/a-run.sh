# call a: the row-base probe (03 and 06 before / after one address a row; QuACK's cubin through kernels_cuda's driver), then the GPU tests of kernels_cuda's fused kernels
R=$OUT/a; mkdir -p $R; D=measurements/2026-11-27-h100/row-base
git log -1 --format="tree %h (+ the working tree's changes)" > $R/a-env.txt 2>/dev/null; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/a-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/a-env.txt
timeout 330 python3 scripts/in_place.py python $D/probes/row_base.py > $R/a-row-base.log 2>&1; echo "probe rc=$?" >> $R/a-env.txt
timeout 200 scripts/test-in-place tests/kernels_cuda -m gpu -q -p no:cacheprovider -rfE -x > $R/a-tests-cuda.log 2>&1; echo "tests rc=$?" >> $R/a-env.txt
cat $R/a-env.txt; tail -3 $R/a-tests-cuda.log; cat $R/a-row-base.log | tail -120
cd $OUT && tar czf a.tgz a && rm -rf a
