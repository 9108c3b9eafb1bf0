# A probe: not part of any package.
"""From lab bench JSON (RUN-sweep_OP_peers.json, as vs_peers.py reads them): the shapes and dtypes
where kernels_cuda or kernels_triton is below QuACK, or below 95% of copy on a shape of at least
64 MiB, one line per op and dtype that misses somewhere: OP DTYPE SHAPES (comma-separated).

    misses.py RUN"""

import json
import sys

IMPLS = {
    "softmax": ("cuda.auto", "triton.softmax", "quack.softmax"),
    "softmax_backward": ("cuda.softmax_backward", "triton.softmax_backward", "quack.softmax_backward"),
}
run = sys.argv[1]
for op, (cu, tr, qk) in IMPLS.items():
    records = json.load(open(f"{run}-sweep_{op}_peers.json"))["records"]
    by = {(r["impl"], "x".join(map(str, r["shape"])), r["dtype"]): r for r in records}
    misses: dict[str, list[str]] = {}
    for (impl, shape, dtype), r in by.items():
        if impl not in (cu, tr):
            continue
        m, n = map(int, shape.split("x"))
        q = by.get((qk, shape, dtype))
        big = m * n * (4 if dtype == "float32" else 2) >= 64 * 2**20
        if (q and q["median_us"] < r["median_us"]) or (big and r["frac_of_copy"] < 0.95):
            shapes = misses.setdefault(dtype, [])
            shapes += [shape] if shape not in shapes else []
    for dtype, shapes in misses.items():
        print(op, dtype, ",".join(shapes))
