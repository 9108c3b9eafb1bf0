"""python -m kernels_triton.tune: autotune the softmax once, on a GPU, at the seed's shapes
(64, 600), (512, 600), (4096, 600) in fp32, fp16 and bf16, forward and backward, and write
the winners to autotune_picks.json beside this file (commit it). On the GPU named there,
kernels_triton.softmax then launches those picks without re-tuning.

    python -m kernels_triton.tune [--out PATH] [--shape M N ...]
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys

import torch
import triton

from kernels_triton.softmax import PICKS_FILE, tune

SEED_SHAPES = ((64, 600), (512, 600), (4096, 600))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernels_triton.tune", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(PICKS_FILE), help="where to write the picks (default: %(default)s)")
    parser.add_argument("--shape", nargs=2, type=int, action="append", metavar=("M", "N"),
                        help="tune this (M, N) instead of the seed's shapes; repeatable")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("python -m kernels_triton.tune needs a CUDA device: the autotuner times configs on it.", file=sys.stderr)
        return 2
    shapes = [tuple(s) for s in args.shape] if args.shape else list(SEED_SHAPES)
    picks = tune(shapes)
    doc = {
        "gpu": torch.cuda.get_device_name(),
        "date": datetime.date.today().isoformat(),
        "command": "python -m kernels_triton.tune" + "".join(f" --shape {m} {n}" for m, n in (args.shape or [])),
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__},
        "picks": picks,
    }
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    for p in picks:
        print(f"{p['kernel']:12s} N={p['N']:<6d} rows/SM={p['rows_per_sm']:<3d} {p['dtype']:9s} "
              f"-> BLOCK={p['block']:<6d} num_warps={p['num_warps']}  (of {p['configs_tried']} configs, at {p['tuned_at']})")
    print(f"wrote {len(picks)} picks to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
