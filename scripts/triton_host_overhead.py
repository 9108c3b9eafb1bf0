"""Host time to issue one softmax call, in microseconds, on a CUDA machine.

The time between calling the function and getting control back, without synchronising
(labtools.bench.time_cpu: perf_counter around each call, median). For a kernel shorter
than that, it is the latency a caller sees -- the MiniGPT LM head at 4096 x 600 is such
a case -- and what a GPU waits for between back-to-back calls.

It imports `kernels_triton` from wherever Python finds it, so the same script times an
older checkout too (NOTES.md, "Host time per call"):

    python3 scripts/in_place.py python scripts/triton_host_overhead.py --references
    PYTHONPATH=/tmp/before/src:packages/labtools/src python3 scripts/triton_host_overhead.py \\
        --label before
"""

from __future__ import annotations

import argparse
import json

import torch
from labtools.bench import time_cpu

CASES = (((4096, 600), torch.float32), ((4096, 600), torch.bfloat16), ((16384, 4096), torch.bfloat16))
REFERENCES = ("torch.softmax.cuda",)  # --references; torch.compile's (~90 us) is in NOTES.md


def issue_us(fn, *args) -> float:
    """Median host time of fn(*args) over up to 200 calls, after a warm-up that compiles,
    tunes and loads whatever the first call needs. 200 calls queue at most ~20 ms of GPU
    work at these shapes: the launch queue never fills, so no call waits for the GPU."""
    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize()
    timing = time_cpu(fn, [args], warmup=0, min_reps=50, max_reps=200, rel_iqr_target=0.05)
    torch.cuda.synchronize()
    return timing.median_us


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", default="this checkout")
    parser.add_argument("--references", action="store_true", help="also F.softmax (labtools' registry)")
    parser.add_argument(
        "--shapes", type=int, default=len(CASES), help="time only the first K cases (default: all)"
    )
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    import importlib

    from kernels_triton import softmax, softmax_backward

    launch = importlib.import_module("kernels_triton.softmax")._launch
    rows = []
    for (m, n), dtype in CASES[: args.shapes]:
        x = torch.randn(m, n, device="cuda", dtype=dtype)
        dy = torch.randn_like(x)
        what = f"{m}x{n} {str(dtype)[6:]}"
        rows.append((f"Triton forward {what}", issue_us(softmax, x)))
        # where the time goes: the output's allocation, and the launch alone into a given output
        rows.append((f"  of which torch.empty_like {what}", issue_us(torch.empty_like, x)))
        rows.append(
            (
                f"  of which the launch (_launch) {what}",
                issue_us(launch, "softmax_fwd", [x, torch.empty_like(x)], m, n, None),
            )
        )
        rows.append(
            (f"Triton forward, x.requires_grad {what}", issue_us(softmax, x.clone().requires_grad_()))
        )
        rows.append((f"Triton backward {what}", issue_us(softmax_backward, torch.softmax(x, -1), dy)))
        if args.references:
            from labtools import registry

            for name in REFERENCES:
                rows.append(
                    (f"{registry.get(name).label} forward {what}", issue_us(registry.get(name).fn, x))
                )
    print(f"host time per call, us ({args.label}; {torch.cuda.get_device_name()}, torch {torch.__version__})")
    for what, us in rows:
        print(f"  {what:48s} {us:8.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "label": args.label,
                    "device": torch.cuda.get_device_name(),
                    "torch": torch.__version__,
                    "host_us": dict(rows),
                },
                f,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
