# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/triton-split-configs/README.md), run from the repository root as .probes/split_configs.py.
"""Device time of kernels_triton.split_row forward and backward under SplitConfig variants
(chunk, warps, prefetch), checked against float64 first. do_bench: L2 flushed, median."""

import sys

import torch
import triton.testing
from kernels_triton import split_row as sr

which = sys.argv[1]
FWD = [(2048, 1), (4096, 2), (8192, 4), (16384, 8), (4096, 1), (8192, 2), (2048, 2), (4096, 4), (8192, 8)]
CASES = {
    "fwd": [
        ((256, 262144), torch.bfloat16),
        ((256, 262144), torch.float32),
        ((1024, 131072), torch.bfloat16),
        ((1024, 131072), torch.float32),
    ],
    "bwd": [
        ((4096, 32768), torch.float32),
        ((1024, 131072), torch.float32),
        ((256, 262144), torch.bfloat16),
        ((4096, 32768), torch.bfloat16),
    ],
}[which]
for shape, dtype in CASES:
    torch.manual_seed(0)
    x = torch.randn(shape, device="cuda").to(dtype)
    out = torch.empty_like(x)
    if which == "fwd":
        ref = torch.softmax(x.double(), -1)
        args = (x, out)
        run = sr.forward
    else:
        y = torch.softmax(x.float(), -1).to(dtype)
        dy = torch.randn(shape, device="cuda").to(dtype)
        ref = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
        args = (y, dy, out)
        run = sr.backward
    line = []
    for chunk, warps in FWD:
        for prefetch in (False, True) if dtype != torch.float32 or which == "bwd" else (False,):
            cfg = sr.SplitConfig(chunk=chunk, num_warps=warps, prefetch=prefetch)
            try:
                run(*args, config=cfg)
            except ValueError:
                line.append(f"{chunk}/{warps}{'p' if prefetch else ''} n/a")
                continue
            err = (out.double() - ref).abs().max().item()
            ms = triton.testing.do_bench(
                lambda cfg=cfg, run=run, args=args: run(*args, config=cfg),
                warmup=25,
                rep=150,
                return_mode="median",
            )
            line.append(
                f"{chunk}/{warps}{'p' if prefetch else ''} {ms * 1e3:6.1f}{'' if err < 1e-2 else ' BAD'}"
            )
    print(f"{which} {shape[0]}x{shape[1]} {str(dtype)[6:]:8s} " + " | ".join(line), flush=True)
