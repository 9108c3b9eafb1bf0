# call k: the 16-bit cluster forward past 131072 columns at many rows, packed at a cap of 64 (the package's) against exponentials held at 80 and 96 (cluster_forms.py), tree 7cf6d7a
R=$OUT/k; mkdir -p $R; D=measurements/2026-11-27-h100/few-rows
git log --oneline -1 > $R/k-env.txt; git status --short >> $R/k-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/k-env.txt
P="timeout 250 python3 scripts/in_place.py python $D/probes/cluster_forms.py"
$P 128x262144,256x262144,512x200000 bfloat16,float16 16384x8x64:0,16384x8x80:1,16384x8x96:1 5 > $R/k-long.log 2>&1; echo "long rc=$? $(date +%T)" >> $R/k-stages.txt
cat $R/k-stages.txt; sed -E 's/  rounds.*//' $R/k-long.log
cd $OUT && tar czf k.tgz k && rm -rf k
