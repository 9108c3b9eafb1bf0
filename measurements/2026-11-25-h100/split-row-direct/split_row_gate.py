"""kernels_triton.softmax and softmax_backward below 64 MiB at shapes split_row.applies() takes
(few rows, or rows past 32768): on one program a row (the size floor, launch.SPLIT_ROW_MIN_BYTES,
at 64 MiB) against the split-row kernels launched directly (the floor at 0), with F.softmax and a
copy of the same tensor in the same round. Device time and call time from labtools.bench.measure
(the harness of `lab bench`).

    python3 scripts/in_place.py python measurements/2026-11-25-h100/split-row-direct/split_row_gate.py
"""

import sys

import torch
from kernels_triton import launch, split_row
from labtools import bench, registry

softmax_module = sys.modules["kernels_triton.softmax"]
SHAPES = [
    (1, 262144),
    (4, 131072),
    (8, 128257),
    (16, 16384),
    (32, 65536),
    (64, 50257),
    (64, 32000),
    (128, 32768),
]
DTYPES = ["float32", "bfloat16"]
FLOORS = {"one program a row": 64 * 1024 * 1024, "split row": 0}


def forget_plans():
    launch._PLANS.clear()
    softmax_module._FORWARD.clear()
    softmax_module._BACKWARD.clear()


copy = registry.get("torch.copy.cuda")
print("| op | shape | dtype | impl | device us | call us | % of copy | split rows? |")
print("|---|---|---|---|---|---|---|---|")
for op, ours, torchs in (
    ("fwd", "triton.softmax", "torch.softmax.cuda"),
    ("bwd", "triton.softmax_backward", "torch.softmax_backward.cuda"),
):
    impl, ref = registry.get(ours), registry.get(torchs)
    for shape in SHAPES:
        for dtype in DTYPES:
            applies = split_row.applies(*shape, getattr(torch, dtype), "cuda", backward=op == "bwd")
            c = bench.measure(copy, shape, dtype, call_time=False, time_cap_s=0.2)
            streams = 2 if op == "fwd" else 3
            copy_us = c.median_us
            rows = [("F.softmax", ref, None)] + [(label, impl, floor) for label, floor in FLOORS.items()]
            for label, fn, floor in rows:
                if floor is not None:
                    launch.SPLIT_ROW_MIN_BYTES = floor
                    forget_plans()
                r = bench.measure(fn, shape, dtype, time_cap_s=0.2)
                frac = (streams / 2) * copy_us / r.median_us
                print(
                    f"| {op} | {shape[0]}x{shape[1]} | {dtype} | {label} | {r.median_us:.1f} | "
                    f"{r.call_us:.1f} | {100 * frac:.1f}% | {applies and floor == 0} |",
                    flush=True,
                )
launch.SPLIT_ROW_MIN_BYTES = 64 * 1024 * 1024
