# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/cuda-held-exps-handover/README.md), run from the repository root as .probes/triton_paths.py.
"""Device time of kernels_triton's two paths at rows of 16384-65536 elements: one program a row
(kernels.py) against the split-row kernels (split_row.py, default config), forward and backward,
whichever the dispatch picks now marked with *. Each path is first checked against float64 on
every row (output NaN-poisoned). labtools.bench.time_cuda: L2 flushed, inputs rotated, median."""

import sys

import kernels_triton
import torch
from kernels_triton import launch
from labtools.bench import l2_bytes, n_input_sets, time_cuda

SHAPES = [(int(a), int(b)) for a, b in (s.split("x") for s in sys.argv[1].split(","))]
real_applies = launch.split_row_applies


def use(path: str) -> None:
    launch.split_row_applies = (lambda *a: path == "split") if path != "auto" else real_applies
    launch.forget_plans()


for M, N in SHAPES:
    for dtype in (torch.float32, torch.bfloat16):
        for direction in ("fwd", "bwd"):
            nbytes = (2 if direction == "fwd" else 3) * M * N * dtype.itemsize
            sets = []
            for k in range(n_input_sets(nbytes, l2_bytes())):
                g = torch.Generator(device="cuda").manual_seed(k)
                x = torch.randn((M, N), generator=g, device="cuda")
                if direction == "fwd":
                    sets.append((x.to(dtype),))
                else:
                    dy = torch.randn((M, N), generator=g, device="cuda").to(dtype)
                    sets.append((torch.softmax(x, -1).to(dtype), dy))
            if direction == "fwd":
                ref = torch.softmax(sets[0][0].double(), -1)
                run = kernels_triton.softmax
            else:
                y, dy = (t.double() for t in sets[0])
                ref = y * (dy - (y * dy).sum(-1, keepdim=True))
                run = kernels_triton.softmax_backward
            picked = (
                "split"
                if real_applies(
                    "softmax_fwd" if direction == "fwd" else "softmax_bwd", M, N, dtype, sets[0][0].device
                )
                else "own"
            )
            line = []
            for path in ("own", "split"):
                use(path)
                out = run(*sets[0])
                err = (out.double() - ref).abs().max().item()
                us = time_cuda(run, sets, time_cap_s=0.4).median_us
                line.append(
                    f"{path}{'*' if path == picked else ''} {us:8.1f}{'' if err < 2e-2 else f' BAD {err:.3g}'}"
                )
            use("auto")
            print(f"{direction} {M}x{N} {str(dtype)[6:]:8s} " + " | ".join(line), flush=True)
            del sets
            torch.cuda.empty_cache()
