"""Device time of kernels_triton.split_row with and without loading ahead
(SplitConfig.prefetch), forward and backward, beside a copy of the same tensor.

    python3 scripts/in_place.py python scripts/split_row_prefetch.py OUT_DIR
        [--shapes 256x262144 1024x131072] [--dtypes float32 bfloat16] [--rounds 2]

Timing: labtools.bench.measure, the harness `lab bench` uses (device time: CUDA events
around each call, L2 flushed before each, the GPU kept busy ahead of each start event,
batches until the spread settles, the median; no call time). % of copy: the op's
compulsory bytes (forward 2 M N size, backward 3 M N size) over its device time, over the
same for a copy of an M x N tensor of the dtype (labtools' torch.copy.cuda reference)
timed in the same round. A round times every variant at a shape and dtype, in the
reverse order from one round to the next; "speed-up" is the device time without prefetch
over the device time with it, within a round (above 1: prefetch is faster). Both variants
use the default chunking of the direction at that shape (split_row.default_config);
"default" says which setting prefetch=None picks there.

Before timing, each variant's output is checked against float64 on its first 16 rows
(max |error| / max |reference|, and NaNs anywhere), and the fallback counter (a program
computing a late peer's partial itself) is read around the timing. Writes
OUT_DIR/results.json and prints a table.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import sys
from pathlib import Path

import numpy as np
import torch
from kernels_triton import split_row as sr
from labtools import bench, references
from labtools import env as environment
from labtools.atomic import atomic_write_text
from labtools.ops import softmax_backward_ref, softmax_ref
from labtools.registry import Implementation

CHECK_ROWS = 16
DEVICE = "cuda"  # a smoke test of this script under the CPU interpreter sets "cpu"


def shape_arg(text: str) -> tuple[int, int]:
    m, n = text.lower().split("x")
    return int(m), int(n)


def variant(direction: str, config: sr.SplitConfig) -> Implementation:
    """split_row in one direction at one config, as a labtools implementation (not registered)."""
    if direction == "fwd":

        def fn(x):
            y = torch.empty_like(x)
            sr.forward(x, y, config=config)
            return y

    else:

        def fn(y, dy):
            dx = torch.empty_like(y)
            sr.backward(y, dy, dx, config=config)
            return dx

    state = "on" if config.prefetch else "off"
    return Implementation(
        fn,
        op="softmax" if direction == "fwd" else "softmax_backward",
        name=f"split_row.{direction}.prefetch_{state}",
        backend="triton",
        label=f"split_row {direction} prefetch {state}",
        device=DEVICE,
    )


def check(impl: Implementation, shape, dtype: str) -> dict:
    """The variant's output on the harness's own kind of inputs against float64."""
    inputs = bench.make_inputs(impl, shape, dtype, seed=12345)
    out = impl.fn(*inputs)
    rows = [t[:CHECK_ROWS].double().cpu().numpy() for t in inputs]
    ref = softmax_ref(*rows) if impl.op == "softmax" else softmax_backward_ref(*rows)
    got = out[:CHECK_ROWS].double().cpu().numpy()
    err = float(np.abs(got - ref).max() / np.abs(ref).max())
    return {"max_rel_err_vs_f64": err, "nans": int(out.isnan().sum())}


def plan_info(direction: str, shape, dtype: torch.dtype, config: sr.SplitConfig | None) -> dict:
    x = torch.empty(shape, dtype=dtype, device=DEVICE)
    tensors = [x, x] if direction == "fwd" else [x, x, x]
    plan = sr._plan(direction, tensors, config, None)
    return {
        "chunk": plan.config.chunk,
        "num_warps": plan.config.num_warps,
        "prefetch": plan.config.prefetch,
        "split": plan.split,
        "groups": plan.groups,
        "programs_per_sm": plan.programs_per_sm,
        "waves": -(-shape[0] // plan.groups),
    }


def measure_point(shape, dtype_name: str, rounds: int, time_cap_s: float, rows: list) -> None:
    dtype = getattr(torch, dtype_name)
    m, n = shape
    sms = sr._device(torch.device(DEVICE)).sms
    copy = next(i for i in references.implementations() if i.name == "torch.copy.cuda")
    variants = [("copy", None, copy)]
    defaults = {}
    for direction in ("fwd", "bwd"):
        base = sr.default_config(direction, m, n, sms)
        defaults[direction] = plan_info(direction, shape, dtype, None)["prefetch"]
        for prefetch in (False, True):
            config = dataclasses.replace(base, prefetch=prefetch)
            variants.append((direction, config, variant(direction, config)))
    checks = {impl.name: check(impl, shape, dtype_name) for d, _, impl in variants if d != "copy"}
    for r in range(rounds):
        order = variants if r % 2 == 0 else variants[::-1]
        records = {}
        for direction, config, impl in order:
            before = sr.fallback_count()
            rec = bench.measure(impl, shape, dtype_name, call_time=False, time_cap_s=time_cap_s)
            records[impl.name] = (direction, config, rec, sr.fallback_count() - before)
        copy_gbps = records[copy.name][2].gbps
        for name, (direction, config, rec, fallbacks) in records.items():
            row = {
                "M": m,
                "N": n,
                "dtype": dtype_name,
                "round": r,
                "direction": direction,
                "impl": name,
                "device_us": rec.median_us,
                "q1_us": rec.q1_us,
                "q3_us": rec.q3_us,
                "reps": rec.reps,
                "unstable": rec.unstable,
                "gbps": rec.gbps,
                "copy_gbps": copy_gbps,
                "fraction_of_copy": rec.gbps / copy_gbps,
            }
            if config is not None:
                row.update(plan_info(direction, shape, dtype, config))
                row["default_prefetch"] = defaults[direction]
                row["fallbacks_while_timing"] = fallbacks
                row.update(checks[name])
            rows.append(row)
            print(json.dumps(row), flush=True)
    if DEVICE == "cuda":
        torch.cuda.empty_cache()


def table(rows: list) -> str:
    lines = [
        "| shape | dtype | dir | prefetch | default | chunk/warps | programs/SM | groups x waves "
        "| device us (rounds) | % of copy (rounds) | speed-up (rounds) | fallbacks | err |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    points = sorted({(r["M"], r["N"], r["dtype"]) for r in rows}, key=lambda p: (p[0], p[1], p[2]))
    for m, n, dtype in points:
        here = [r for r in rows if (r["M"], r["N"], r["dtype"]) == (m, n, dtype)]
        for direction in ("copy", "fwd", "bwd"):
            for prefetch in (None,) if direction == "copy" else (False, True):
                mine = [r for r in here if r["direction"] == direction and r.get("prefetch") == prefetch]
                if not mine:
                    continue
                mine.sort(key=lambda r: r["round"])
                us = ", ".join(f"{r['device_us']:.1f}" for r in mine)
                frac = ", ".join(f"{100 * r['fraction_of_copy']:.1f}" for r in mine)
                ratio = ""
                if prefetch:
                    off = {
                        r["round"]: r
                        for r in here
                        if r["direction"] == direction and r.get("prefetch") is False
                    }
                    ratio = ", ".join(f"{off[r['round']]['device_us'] / r['device_us']:.3f}x" for r in mine)
                first = mine[0]
                if direction == "copy":
                    lines.append(f"| {m}x{n} | {dtype} | copy | | | | | | {us} | {frac} | | | |")
                    continue
                lines.append(
                    f"| {m}x{n} | {dtype} | {direction} | {'on' if prefetch else 'off'} | "
                    f"{'on' if first['default_prefetch'] else 'off'} | {first['chunk']}/{first['num_warps']}w | "
                    f"{first['programs_per_sm']} | {first['groups']} x {first['waves']} | {us} | {frac} | {ratio} | "
                    f"{sum(r['fallbacks_while_timing'] for r in mine)} | {first['max_rel_err_vs_f64']:.1e} |"
                )
    lines.append("speed-up: device time without prefetch over device time with it (above 1: prefetch faster)")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--shapes", nargs="+", type=shape_arg, default=[(256, 262144), (1024, 131072)])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--time-cap", type=float, default=2.0, help="seconds of timing per variant and round")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("split_row_prefetch: needs a CUDA device", file=sys.stderr)
        return 2
    args.out_dir.mkdir(parents=True, exist_ok=True)
    env = {
        **environment.collect().to_dict(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "prefetch_defaults": {str(k).replace("torch.", ""): v for k, v in sr.PREFETCH.items()},
    }
    print(json.dumps(env), flush=True)
    rows: list = []
    for shape in args.shapes:
        for dtype in args.dtypes:
            measure_point(shape, dtype, args.rounds, args.time_cap, rows)
            atomic_write_text(args.out_dir / "results.json", json.dumps({"env": env, "rows": rows}, indent=1))
    print()
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
