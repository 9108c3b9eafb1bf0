"""QuACK / ours for sweep runs side by side, from lab bench JSON, with % of copy and the worst
fraction of copy on shapes of at least 64 MiB: python probes/vs_peers.py c d (from this folder)."""

import json
import sys

runs = sys.argv[1:]
IMPLS = {
    "softmax": ("cuda.auto", "triton.softmax", "quack.softmax"),
    "softmax_backward": ("cuda.softmax_backward", "triton.softmax_backward", "quack.softmax_backward"),
}
for op, (cu, tr, qk) in IMPLS.items():
    data = []
    for r in runs:
        d = json.load(open(f"{r}-sweep_{op}_peers.json"))
        data.append({(x["impl"], "x".join(map(str, x["shape"])), x["dtype"]): x for x in d["records"]})
        print(f"{op} run {r}: copy {d['records'][0]['copy_gbps']:.0f} GB/s")
    cases = list(dict.fromkeys((k[1], k[2]) for k in data[0]))  # in the sweep's order
    print(
        f"{'shape':12s} {'dtype':9s} "
        + "  ".join(f"run {r}: QuACK us | cuda us (copy) Q/c | triton us (copy) Q/t" for r in runs)
    )
    counts = {r: [0, 0, 0] for r in runs}
    worst = {r: {} for r in runs}
    for shape, dtype in cases:
        cells = []
        for r, dd in zip(runs, data):
            q, c, t = dd.get((qk, shape, dtype)), dd[(cu, shape, dtype)], dd[(tr, shape, dtype)]
            m, n = map(int, shape.split("x"))
            if m * n * (4 if dtype == "float32" else 2) >= 64 * 2**20:
                for name, x in (("cuda", c), ("triton", t)):
                    w = worst[r].get(name)
                    if w is None or x["frac_of_copy"] < w[0]:
                        worst[r][name] = (x["frac_of_copy"], shape, dtype)
            cu_cell = f"{c['median_us']:7.1f} ({c['frac_of_copy'] * 100:3.0f}%)"
            tr_cell = f"{t['median_us']:7.1f} ({t['frac_of_copy'] * 100:3.0f}%)"
            if q:
                qc, qt = q["median_us"] / c["median_us"], q["median_us"] / t["median_us"]
                counts[r][0] += 1
                counts[r][1] += qc >= 1
                counts[r][2] += qt >= 1
                cells.append(f"{q['median_us']:7.1f} | {cu_cell} {qc:.3f} | {tr_cell} {qt:.3f}")
            else:
                cells.append(f"{'-':>7s} | {cu_cell}   -   | {tr_cell}   -  ")
        print(f"{shape:12s} {dtype:9s} " + "  ".join(cells))
    for r in runs:
        n, c, t = counts[r]
        print(
            f"run {r}: at or above QuACK: cuda {c}/{n}, triton {t}/{n}; worst % of copy (>= 64 MiB): "
            + ", ".join(f"{k} {v[0] * 100:.1f}% ({v[1]} {v[2]})" for k, v in worst[r].items())
        )
    print()
