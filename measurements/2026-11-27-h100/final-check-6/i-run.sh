# call i (warm, the peers still in ~/peers/site): lab bench with one implementation a process (beside F.softmax, which lab bench times first), QuACK, kernels_cuda and kernels_triton in turns, twice: each then takes the same place in its run
R=$OUT/i; mkdir -p $R; P=~/peers
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
git log --oneline -1 > $R/i-env.txt; git status --short >> $R/i-env.txt
S=8192x8192,16384x4096,32768x1024
for r in 1 2; do
  for impl in quack.softmax cuda.auto triton.softmax; do
    timeout 60 python3 scripts/in_place.py lab bench softmax --shapes $S --dtypes bfloat16 --impls $impl --time-cap 0.3 --json $R/i-$impl-$r.json > $R/i-$impl-$r.log 2>&1; echo "$impl $r rc=$? $(date +%T)" >> $R/i-stages.txt
  done
done
cat $R/i-stages.txt
python3 - "$R" <<'PY'
import json, sys
R = sys.argv[1]
for r in (1, 2):
    by = {}
    for impl in ("quack.softmax", "cuda.auto", "triton.softmax"):
        for rec in json.load(open(f"{R}/i-{impl}-{r}.json"))["records"]:
            by[(rec["impl"], "x".join(map(str, rec["shape"])))] = rec["median_us"]
    for shape in ("8192x8192", "16384x4096", "32768x1024"):
        q, c, t = (by[(i, shape)] for i in ("quack.softmax", "cuda.auto", "triton.softmax"))
        print(f"round {r} {shape:11s} quack {q:7.2f} cuda {c:7.2f} triton {t:7.2f}  Q/cuda {q / c:.3f} Q/triton {q / t:.3f}")
PY
cd $OUT && tar czf i.tgz i && rm -rf i
