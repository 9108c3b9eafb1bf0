# call h (warm, the peers still in ~/peers/site): lab bench at three 16-bit shapes with the sweep's order of implementations and with QuACK first, twice each (does QuACK's figure depend on what ran before it?)
R=$OUT/h; mkdir -p $R; P=~/peers
export PYTHONPATH=$P/site:$P/site/nvidia_cutlass_dsl/dsl_packages
git log --oneline -1 > $R/h-env.txt; git status --short >> $R/h-env.txt
S=8192x8192,16384x4096,32768x1024
for r in 1 2; do
  timeout 100 python3 scripts/in_place.py lab bench softmax --shapes $S --dtypes bfloat16 --impls cuda.auto,triton.softmax,torch.compile.softmax.cuda,quack.softmax,liger.softmax --time-cap 0.3 --json $R/h-sweep-order-$r.json > $R/h-sweep-order-$r.log 2>&1; echo "sweep order $r rc=$? $(date +%T)" >> $R/h-stages.txt
  timeout 100 python3 scripts/in_place.py lab bench softmax --shapes $S --dtypes bfloat16 --impls quack.softmax,cuda.auto,triton.softmax,torch.compile.softmax.cuda,liger.softmax --time-cap 0.3 --json $R/h-quack-first-$r.json > $R/h-quack-first-$r.log 2>&1; echo "quack first $r rc=$? $(date +%T)" >> $R/h-stages.txt
done
cat $R/h-stages.txt
python3 - "$R" <<'PY'
import json, sys, glob, os
for f in sorted(glob.glob(sys.argv[1] + "/h-*.json")):
    recs = json.load(open(f))["records"]
    order = list(dict.fromkeys(r["impl"] for r in recs))
    by = {(r["impl"], "x".join(map(str, r["shape"]))): r["median_us"] for r in recs}
    for shape in dict.fromkeys("x".join(map(str, r["shape"])) for r in recs):
        q = by[("quack.softmax", shape)]
        cells = "  ".join(f"{i.split('.')[0]} {by[(i, shape)]:7.2f}" for i in order if (i, shape) in by)
        print(f"{os.path.basename(f):24s} {shape:11s} {cells}  Q/cuda {q / by[('cuda.auto', shape)]:.3f} Q/triton {q / by[('triton.softmax', shape)]:.3f}")
PY
cd $OUT && tar czf h.tgz h && rm -rf h
