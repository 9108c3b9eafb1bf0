# call a: every GPU test at 06ed2f8 (the tree no GPU had run); the probe of a cluster forward that streams its chunk twice (reread_fwd.py)
R=$OUT/a; mkdir -p $R; D=measurements/2026-11-27-h100/cluster-reread
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv >> $R/a-env.txt
python3 -c "import torch, triton, cupy, numpy; print(torch.__version__, triton.__version__, cupy.__version__, numpy.__version__)" >> $R/a-env.txt
start=$(date +%s); timeout 290 scripts/test-in-place tests -m gpu -q -p no:cacheprovider -rfE > $R/a-tests-gpu.log 2>&1; echo "tests rc=$? $(( $(date +%s) - start )) s" >> $R/a-stages.txt
start=$(date +%s); timeout 270 python3 scripts/in_place.py python $D/probes/reread_fwd.py 256x262144,1024x131072,2048x65536 > $R/a-reread.log 2>&1; echo "probe rc=$? $(( $(date +%s) - start )) s" >> $R/a-stages.txt
cat $R/a-stages.txt; tail -2 $R/a-tests-gpu.log; grep -E "FAILED|ERROR" $R/a-tests-gpu.log | head; grep -E "^[0-9]|best" $R/a-reread.log
