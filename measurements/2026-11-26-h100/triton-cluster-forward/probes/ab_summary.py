"""Same-run A/B from lab bench JSON: `python probes/ab_summary.py DIR PREFIX` reads
DIR/PREFIX-ab-{old,new}-*.json and prints, per implementation, shape and dtype, the best device
median (CUDA events, L2 flushed) and the best call time (wall per call, back to back) of each
tree over the rounds, and new / old of each."""

import collections
import glob
import json
import sys

root, prefix = sys.argv[1], sys.argv[2]
best = collections.defaultdict(dict)
for tree in ("old", "new"):
    for path in sorted(glob.glob(f"{root}/{prefix}-ab-{tree}-*.json")):
        for r in json.load(open(path))["records"]:
            if r["impl"].startswith("torch"):
                continue
            key = (r["impl"], "x".join(map(str, r["shape"])), r["dtype"])
            for field in ("median_us", "call_us"):
                best[key][tree, field] = min(best[key].get((tree, field), float("inf")), r[field])
            best[key][tree, "copy"] = r["frac_of_copy"]
for (impl, shape, dtype), d in best.items():
    if ("old", "median_us") in d and ("new", "median_us") in d:
        dev = d["new", "median_us"] / d["old", "median_us"]
        call = d["new", "call_us"] / d["old", "call_us"]
        print(
            f"{impl:16s} {shape:12s} {dtype:9s} device old {d['old', 'median_us']:8.2f} new {d['new', 'median_us']:8.2f}"
            f" new/old {dev:.3f} | call old {d['old', 'call_us']:8.2f} new {d['new', 'call_us']:8.2f} new/old {call:.3f}"
            f" | copy {d['new', 'copy'] * 100:.1f}%"
        )
