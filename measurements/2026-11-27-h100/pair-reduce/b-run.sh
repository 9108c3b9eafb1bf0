# call b: the 16-bit cluster forward of many waves past 131072 columns in other block forms (probes/cluster_forms.py; tree 538a8c7, whose :0 forms reduce pairs once): the package's 8 warps capped at 64 registers, uncapped (63), 16 warps (42; capped at 32: 4 blocks an SM), 4 warps at 96, and 8 warps at 80 holding the exponentials
R=$OUT/b; mkdir -p $R; D=measurements/2026-11-27-h100/pair-reduce
git log --oneline -1 > $R/b-env.txt; git status --short >> $R/b-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/b-env.txt
P="timeout 400 python3 scripts/in_place.py python $D/probes/cluster_forms.py"
$P 128x262144,256x262144,512x200000,1024x262144 bfloat16 16384x8x64:0,16384x8:0,16384x16:0,16384x16x32:0,16384x4x96:0,16384x8x80:1 5 > $R/b-long.log 2>&1; echo "long rc=$? $(date +%T)" >> $R/b-stages.txt
cat $R/b-stages.txt; sed -E 's/  rounds.*//' $R/b-long.log
cd $OUT && tar czf b.tgz b && rm -rf b
