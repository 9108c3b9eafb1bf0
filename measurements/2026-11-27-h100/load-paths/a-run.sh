# call a: kernels_triton's one-pass forward with L2-only loads (.cg), evict_first loads, streaming stores (.cs) against the package's launch (probes/load_paths.py), at the one-pass shapes where QuACK led both backends in ../final-check-5/ (d-vs-peers.txt)
R=$OUT/a; mkdir -p $R; D=measurements/2026-11-27-h100/load-paths
git log --oneline -1 > $R/a-env.txt; git status --short >> $R/a-env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/a-env.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/a-env.txt
timeout 300 python3 scripts/in_place.py python $D/probes/load_paths.py 32768x1024,16384x4096,8192x8192,65536x600 bfloat16 5 > $R/a-bf16.log 2>&1; echo "bf16 rc=$? $(date +%T)" >> $R/a-stages.txt
timeout 120 python3 scripts/in_place.py python $D/probes/load_paths.py 8192x8192,65536x600 float32 5 > $R/a-f32.log 2>&1; echo "f32 rc=$? $(date +%T)" >> $R/a-stages.txt
cat $R/a-stages.txt; sed -E 's/  rounds.*//' $R/a-bf16.log $R/a-f32.log
cd $OUT && tar czf a.tgz a && rm -rf a
