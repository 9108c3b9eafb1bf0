"""Same-run A/B of several trees from lab bench JSON: `python ab_trees.py DIR PREFIX BASE TREE...`
reads DIR/PREFIX-ab-TREE-*.json and prints, per implementation, shape and dtype, each tree's best
device median (CUDA events, L2 flushed) and best call time (wall per call, back to back) over the
rounds, and each tree's ratio to BASE's."""

import collections
import glob
import json
import sys

root, prefix, *trees = sys.argv[1:]
best = collections.defaultdict(dict)
for tree in trees:
    for path in sorted(glob.glob(f"{root}/{prefix}-ab-{tree}-*.json")):
        for r in json.load(open(path))["records"]:
            if r["impl"].startswith("torch"):
                continue
            key = (r["impl"], "x".join(map(str, r["shape"])), r["dtype"])
            for field in ("median_us", "call_us"):
                best[key][tree, field] = min(best[key].get((tree, field), float("inf")), r[field])
            best[key][tree, "copy"] = r["frac_of_copy"]
base = trees[0]
for (impl, shape, dtype), d in best.items():
    if (base, "median_us") not in d:
        continue
    line = f"{impl:24s} {shape:12s} {dtype:9s} {base} {d[base, 'median_us']:8.2f} us ({d[base, 'copy'] * 100:5.1f}%)"
    for tree in trees[1:]:
        if (tree, "median_us") in d:
            dev = d[tree, "median_us"] / d[base, "median_us"]
            call = d[tree, "call_us"] / d[base, "call_us"]
            line += f" | {tree} {d[tree, 'median_us']:8.2f} ({d[tree, 'copy'] * 100:5.1f}%) dev {dev:.3f} call {call:.3f}"
    print(line)
