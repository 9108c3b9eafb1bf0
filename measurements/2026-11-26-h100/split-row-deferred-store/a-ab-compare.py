import glob
import json
import sys

R = sys.argv[1]
best = {}
for f in sorted(glob.glob(f"{R}/ab-*-*.json")):
    v = f.split("ab-")[1].split("-")[0]
    for r in json.load(open(f))["records"]:
        if r["impl"] != "triton.softmax":
            continue
        k = (tuple(r["shape"]), r["dtype"])
        cur = best.setdefault(k, {}).get(v)
        if cur is None or r["median_us"] < cur[0]:
            best[k][v] = (r["median_us"], r.get("frac_of_copy") or 0)
for k, d in best.items():
    o, n = d.get("old"), d.get("new")
    if o and n:
        print(
            f"{str(k):36s} old {o[0]:8.1f} us {o[1] * 100:5.1f}%  new {n[0]:8.1f} us {n[1] * 100:5.1f}%  {n[0] / o[0] - 1:+.1%}"
        )
