import glob
import json
import sys

R = sys.argv[1]
best = {}
for f in sorted(glob.glob(f"{R}/ab2-*-*.json")):
    v = f.split("ab2-")[1].split("-")[0]
    for r in json.load(open(f))["records"]:
        if r["impl"] == "triton.softmax":
            k = (tuple(r["shape"]), r["dtype"])
            cur = best.setdefault(k, {}).get(v)
            if cur is None or r["median_us"] < cur:
                best[k][v] = r["median_us"]
for k, d in best.items():
    o = d["old"]
    print(
        f"{str(k):36s} old {o:8.1f}",
        "  ".join(f"{v} {d[v]:8.1f} ({d[v] / o - 1:+.1%})" for v in d if v != "old"),
    )
