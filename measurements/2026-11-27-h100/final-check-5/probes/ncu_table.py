# A probe: not part of any package.
"""Each miss of a sweep run beside its ncu durations: for every (op, shape, dtype) that
probes/misses.py lists, the sweep's medians (QuACK / ours) and, from lab ncu's ncu_summary.json
in ncu-{fwd,bwd}-DTYPE/, each implementation's kernel duration, DRAM % of peak and occupancy.

    ncu_table.py RUN  (from this folder; RUN-sweep_*_peers.json and ncu-*/ beside it)"""

import json
import sys
from pathlib import Path

run = sys.argv[1]
IMPLS = {
    "softmax": ("fwd", "cuda.auto", "triton.softmax", "quack.softmax"),
    "softmax_backward": ("bwd", "cuda.softmax_backward", "triton.softmax_backward", "quack.softmax_backward"),
}
for op, (d, cu, tr, qk) in IMPLS.items():
    sweep = {
        (r["impl"], "x".join(map(str, r["shape"])), r["dtype"]): r
        for r in json.load(open(f"{run}-sweep_{op}_peers.json"))["records"]
    }
    for folder in sorted(Path(".").glob(f"ncu-{d}-*")):
        dtype = folder.name.split("-")[-1]
        kernels = json.load(open(folder / "ncu_summary.json"))
        by_case = {k["case"]: k for k in kernels}
        shapes = list(dict.fromkeys(k["case"].split()[1] for k in kernels))
        print(f"{op} {dtype}: sweep QuACK/ours (median us) | ncu us, DRAM %, occupancy %")
        for shape in shapes:
            q = sweep[(qk, shape, dtype)]["median_us"]
            cells = []
            for impl in (cu, tr, qk):
                k = by_case.get(f"{impl} {shape} {dtype}")
                ratio = "" if impl == qk else f"{q / sweep[(impl, shape, dtype)]['median_us']:.3f} "
                ncu = (
                    f"{k['duration_us']:7.1f} {k['dram_pct']:3.0f}% {k['achieved_occupancy_pct']:3.0f}%"
                    if k
                    else "-"
                )
                cells.append(f"{impl.split('.')[0]:6} {ratio}{ncu}")
            print(f"  {shape:11} " + " | ".join(cells))
        print()
