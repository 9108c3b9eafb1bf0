"""python -m kernels_triton.tune: autotune the softmax once, on a GPU, and write the winners
to autotune_picks.json beside this file (commit it). On the GPU named there,
kernels_triton.softmax then launches those picks without re-tuning.

By default it tunes the seed's shapes (64, 600), (512, 600), (4096, 600) in fp32, fp16 and
bf16, and every shape of `lab bench`'s sweep (labtools.sweep.SWEEP_SHAPES) in fp32 and bf16
(fp16 launches take a bf16 pick: the same bytes), forward and backward. Every candidate
config is compiled first, in parallel worker processes, then timed.

    python -m kernels_triton.tune [--out PATH] [--shape M N ...] [--workers K]
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import time

import torch
import triton
from labtools.sweep import SWEEP_SHAPES

from kernels_triton.softmax import DTYPES, PICKS_FILE, tune

SEED_SHAPES = ((64, 600), (512, 600), (4096, 600))
SWEEP_DTYPES = (torch.float32, torch.bfloat16)


def default_tasks() -> list[tuple[int, int, torch.dtype]]:
    seed = [(m, n, d) for m, n in SEED_SHAPES for d in DTYPES]
    return seed + [(m, n, d) for m, n in SWEEP_SHAPES for d in SWEEP_DTYPES if (m, n, d) not in seed]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernels_triton.tune", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--out", default=str(PICKS_FILE), help="where to write the picks (default: %(default)s)"
    )
    parser.add_argument(
        "--shape",
        nargs=2,
        type=int,
        action="append",
        metavar=("M", "N"),
        help="tune this (M, N), in fp32, fp16 and bf16, instead of the default shapes; repeatable",
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="compile processes (default: one per CPU, at most 16)"
    )
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print(
            "python -m kernels_triton.tune needs a CUDA device: the autotuner times configs on it.",
            file=sys.stderr,
        )
        return 2
    tasks = [(m, n, d) for m, n in args.shape for d in DTYPES] if args.shape else default_tasks()
    start = time.perf_counter()

    def write(picks: list[dict]) -> None:  # after every shape: a run cut short keeps what it tuned
        doc = {
            "gpu": torch.cuda.get_device_name(),
            "date": datetime.date.today().isoformat(),
            "command": "python -m kernels_triton.tune"
            + "".join(f" --shape {m} {n}" for m, n in (args.shape or [])),
            "versions": {
                "python": platform.python_version(),
                "torch": torch.__version__,
                "triton": triton.__version__,
            },
            "note": "timings_us: every config timed at tuned_at, fastest first, 'BLOCK/num_warps[/L2]' (/L2: l2_hints): "
            "median us (triton.testing.do_bench, L2 cleared before each run)",
            "picks": picks,
        }
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        for p in picks[-2:]:  # this shape's forward and backward
            timings = "  ".join(f"{label}:{us}" for label, us in p["timings_us"].items())
            print(
                f"{p['kernel']:12s} N={p['N']:<6d} rows/SM={p['rows_per_sm']:<3d} {p['dtype']:9s} at "
                f"{p['tuned_at'][0]}x{p['tuned_at'][1]} ({time.perf_counter() - start:.0f} s): {timings}",
                flush=True,
            )

    picks = tune(tasks, workers=args.workers, progress=write)
    print(f"wrote {len(picks)} picks to {args.out} in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
