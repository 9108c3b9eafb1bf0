"""Time every plan that could serve a shape, forward and backward, and keep each row length's pick.

    python -m kernels_cuda.tune                          # the sweep's shapes, fp32 and bf16 -> user picks
    python -m kernels_cuda.tune --commit                 # the same, into this GPU's section of cuda_picks.json
    python -m kernels_cuda.tune --shapes 65536x600 --dtypes bfloat16 --json out/tune.json

The candidates (picks.py's labels) for a shape, dtype and direction: the rule's own plan,
the fused kernel at the 3 fewest threads a row that hold the row (more packs a thread, more bytes
in flight an SM: what a card of more bandwidth needs), the cluster kernel at each cluster size
whose chunk fits a block (rows past 16 KB, sm_90), and past 32 KB the forward's online or the
backward's two-pass kernel. Each is first checked against labtools' float64 reference on a sample
of rows (output NaN-poisoned; a wrong one is reported and not timed), then timed by
labtools.bench.time_cuda (cold L2, inputs rotated). A row length's pick is the plan of least mean
slowdown over the row counts timed (each row count weighs the same): one plan for every row count,
as batch invariance needs. Prints a line a candidate, fastest first; --json keeps every number.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kernels_cuda import _atomic, arrays, backward_plans, codegen, picks
from kernels_cuda import softmax_variants as variants

CHECK_ROWS = 8  # rows compared with the float64 reference per candidate (first, last, spread between)
KEEP_FUSED = 3  # fused candidates: the fewest threads a row that hold the row


@dataclass(frozen=True)
class Candidate:
    name: str  # a picks.py label, or "rule"
    launch: variants.Launch


def labels(N: int, dtype: str, vec: int, device: variants.Device, direction: str) -> list[str]:
    """The pick labels worth timing for rows of N (see the module docstring)."""
    size, forward = arrays.ITEMSIZE[dtype], direction == "forward"
    most_items, most_tpr = (
        (variants.fused_items_max(vec), 1024) if forward else (backward_plans.FUSED_ITEMS_MAX, 512)
    )
    fused = [t for t in (1 << k for k in range(11)) if t <= most_tpr and -(-N // vec // t) <= most_items]
    out = [f"fused:{t}" for t in fused[:KEEP_FUSED]] if vec == variants.full_vec(dtype) else []
    if device.cc >= 90 and N * size > 16 * 1024:
        out += [f"cluster:{c}" for c in variants.CLUSTER_SIZES if c <= device.max_cluster]
    return out + (["online" if forward else "twopass"] if N * size > 32 * 1024 else [])


def candidates(
    M: int, N: int, dtype: str, device: variants.Device, direction: str = "forward"
) -> list[Candidate]:
    """Every candidate for a contiguous (M, N) input and fresh outputs, each launch once, the rule's
    plan first (named by the label of the same plan where there is one, else "rule")."""
    vec = variants.pack_width(dtype, N, (0, 0), (N, N))  # torch allocations are 16-byte aligned
    plans = variants.softmax_plans if direction == "forward" else backward_plans
    cfg = picks.for_card(plans.AUTO, device)
    rule = plans._rule(N, dtype, vec, device, cfg, True, None).launch(M)
    found = {rule: "rule"}
    for label in labels(N, dtype, vec, device, direction):
        rows = plans.plan_pick(label, N, dtype, vec, device, cfg, True, None)
        if rows is not None and found.get(rows.launch(M)) in (None, "rule"):
            found[rows.launch(M)] = label
    return [Candidate(name, launch) for launch, name in found.items()]


def _check(run, tensors, dtype: str) -> float:
    """Max |error| / tolerance over a sample of rows (<= 1 passes), with the output NaN-poisoned."""
    import numpy as np
    from labtools.ops import softmax_backward_ref, softmax_ref, tolerance

    *inputs, out = tensors
    out.fill_(math.nan)
    run(*tensors)
    m = out.shape[0]
    rows = sorted({0, m - 1, *np.linspace(0, m - 1, CHECK_ROWS).astype(int).tolist()})
    got, ref_in = out[rows].double().cpu().numpy(), [t[rows].double().cpu().numpy() for t in inputs]
    ref = softmax_ref(*ref_in) if len(inputs) == 1 else softmax_backward_ref(*ref_in)
    tol = tolerance(dtype)
    err = np.abs(got - ref) / (tol["atol"] + tol["rtol"] * np.abs(ref))
    return float(np.max(np.where(np.isnan(err), np.inf, err)))


def _runner(launch: variants.Launch, M: int, N: int, device_id: int, stream: int):
    """A call of `launch` on contiguous rows: (x, y) forward, (y, dy, dx) backward."""
    if launch.spec.source in (backward_plans.FUSED_SOURCE, backward_plans.CLUSTER_SOURCE):
        from kernels_cuda import backward_call

        packed = backward_call.packed_launch(launch, device_id, M, N, (N, N, N))
        return lambda y, dy, dx: packed(stream, y.data_ptr(), dy.data_ptr(), dx.data_ptr())
    packed = variants.packed_launch(launch, device_id, N, N, M, N)
    return lambda x, y: packed(stream, x.data_ptr(), y.data_ptr())


def tune(shapes, dtypes, time_cap_s: float) -> dict:
    """Time every candidate at each shape, dtype and direction; returns the records and the picks."""
    import torch
    from labtools.bench import l2_bytes, n_input_sets, time_cuda

    device_id = torch.cuda.current_device()
    device = variants.device_for(device_id)
    plans = {
        (s, d, w): candidates(*s, d, device, w) for s in shapes for d in dtypes for w in picks.DIRECTIONS
    }
    t0 = time.perf_counter()
    specs = {c.launch.spec: None for cs in plans.values() for c in cs}
    codegen.compile_all([codegen.device_arch(device_id)], specs=list(specs))
    print(f"compiled {len(specs)} kernels in {time.perf_counter() - t0:.1f} s", flush=True)
    records, stream = [], torch.cuda.current_stream().cuda_stream
    for ((M, N), dtype, direction), cands in plans.items():
        k = 2 if direction == "forward" else 3
        sets = []
        for s in range(n_input_sets(k * M * N * arrays.ITEMSIZE[dtype], l2_bytes())):
            g = torch.Generator(device="cuda").manual_seed(s)
            x = torch.randn((M, N), generator=g, device="cuda").to(getattr(torch, dtype))
            sets.append(
                (x, torch.empty_like(x))
                if k == 2
                else (x.softmax(-1), torch.randn_like(x), torch.empty_like(x))
            )
        for cand in cands:
            run = _runner(cand.launch, M, N, device_id, stream)
            err = _check(run, sets[0], dtype)
            us = time_cuda(run, sets, time_cap_s=time_cap_s).median_us if err <= 1 else math.nan
            records.append({"direction": direction, "shape": [M, N], "dtype": dtype, "candidate": cand.name,
                            "spec": cand.launch.spec.name, "median_us": us, "err_over_tol": err})  # fmt: skip
        for r in sorted(records[-len(cands) :], key=lambda r: (math.isnan(r["median_us"]), r["median_us"])):
            wrong = "" if r["err_over_tol"] <= 1 else f"  WRONG (err/tol {r['err_over_tol']:.3g})"
            print(
                f"{direction:8} {M}x{N} {dtype:<8} {r['candidate']:<11} {r['median_us']:9.1f} us  {r['spec']}{wrong}"
            )
        del sets
        torch.cuda.empty_cache()
    return {"device": device.name, "records": records, "picks": choose(records)}


def choose(records: list[dict]) -> list[dict]:
    """Each (direction, dtype, N)'s pick: the candidate of least mean slowdown against each row
    count's fastest, among those timed right at every row count."""
    groups: dict[tuple, dict[int, dict[str, float]]] = {}
    for r in records:
        if not math.isnan(r["median_us"]):
            groups.setdefault((r["direction"], r["dtype"], r["shape"][1]), {}).setdefault(r["shape"][0], {})[
                r["candidate"]
            ] = r["median_us"]
    out = []
    for (direction, dtype, N), by_m in groups.items():
        common = set.intersection(*(set(t) for t in by_m.values()))
        slowdown = {c: sum(t[c] / min(t.values()) for t in by_m.values()) / len(by_m) for c in sorted(common)}
        best = min(slowdown, key=slowdown.get)
        out.append({"direction": direction, "dtype": dtype, "N": N, "plan": best,
                    "tuned_at": [[m, N] for m in sorted(by_m)],
                    "slowdown": {c: round(s, 3) for c, s in sorted(slowdown.items(), key=lambda cs: cs[1])}})  # fmt: skip
    return out


def save(new: list[dict], path: Path, gpu: str) -> list[dict]:
    """Merge `new` picks into GPU `gpu`'s section of the picks file at `path` (a pick replaces one of
    the same direction, dtype and N; other GPUs' sections untouched); returns the section's picks."""
    doc = json.loads(path.read_text()) if path.exists() else {"format": 1, "cards": {}}
    key = lambda p: (p["direction"], p["dtype"], p["N"])  # noqa: E731
    every = list(
        ({key(p): p for p in doc["cards"].get(gpu, {}).get("picks", [])} | {key(p): p for p in new}).values()
    )
    import torch

    versions = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "nvrtc": "{}.{}".format(*codegen.nvrtc_version()),
    }
    doc["cards"][gpu] = {"date": datetime.date.today().isoformat(), "versions": versions,
                         "command": " ".join(["python -m kernels_cuda.tune", *sys.argv[1:]]), "picks": every}  # fmt: skip
    doc["cards"] = dict(sorted(doc["cards"].items()))
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic.atomic_write_text(path, json.dumps(doc, indent=1) + "\n")
    variants.clear_caches()  # plans made before take the new picks
    return every


def main(argv: list[str] | None = None) -> int:
    from labtools.sweep import SWEEP_SHAPES, parse_shapes

    parser = argparse.ArgumentParser(prog="python -m kernels_cuda.tune", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=None, help="comma-separated MxN (default: the sweep's shapes)")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--time-cap", type=float, default=0.3, help="seconds of timing per candidate at most")
    parser.add_argument(
        "--commit", action="store_true", help=f"into this GPU's section of {picks.PICKS_FILE.name}"
    )
    parser.add_argument("--json", type=Path, default=None, help="every timing, and the picks")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("python -m kernels_cuda.tune needs a CUDA device: it times plans on it.", file=sys.stderr)
        return 2
    shapes = parse_shapes(args.shapes) if args.shapes else SWEEP_SHAPES
    result = tune(shapes, [d.strip() for d in args.dtypes.split(",")], args.time_cap)
    gpu = result["device"]
    out = picks.PICKS_FILE if args.commit else picks.user_path(gpu)
    every = save(result["picks"], out, gpu)
    for p in result["picks"]:
        print(f"pick {p['direction']:8} {p['dtype']:<8} N={p['N']:<7} {p['plan']:<11} {p['slowdown']}")
    print(f"{len(result['picks'])} picks; {out} [{gpu}] now holds {len(every)}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                result | {"command": " ".join(["python -m kernels_cuda.tune", *sys.argv[1:]])}, indent=1
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
