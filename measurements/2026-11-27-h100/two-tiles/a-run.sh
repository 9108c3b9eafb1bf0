# call a: kernels_triton's one-pass kernels with a row as two power-of-two tiles (probes/two_tiles.py) against the package's launch, forward and backward, at rows of 600 and 1500
R=$OUT/a; mkdir -p $R; D=measurements/2026-11-27-h100/two-tiles
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/a-env.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/a-env.txt
P="timeout 420 python3 scripts/in_place.py python $D/probes/two_tiles.py time"
$P 4096x600,65536x600,16384x1500 float32,bfloat16 1x1,2x1,2x2,4x2,4x4,8x4 5 > $R/a-probe.log 2>&1; echo "probe rc=$? $(date +%T)" >> $R/a-stages.txt
cat $R/a-stages.txt; sed -E 's/  rounds.*//' $R/a-probe.log
cd $OUT && tar czf a.tgz a && rm -rf a
