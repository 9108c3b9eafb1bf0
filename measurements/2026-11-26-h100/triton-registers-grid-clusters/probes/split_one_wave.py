# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/triton-registers-grid-clusters/README.md), run from the repository root as .probes/split_one_wave.py.
# ruff: noqa: E741, B023, F401 -- kept as it ran
"""Device time of kernels_triton.split_row forward and backward with the persistent grid (the
default: G groups loop over the rows in waves) against one group of programs a row (a grid of
M * split programs, each taking one chunk once; the hardware schedules groups as others
retire), checked against float64 first. do_bench: L2 flushed, median; the variants of a case
alternate over two rounds. The fallback count (a peer's partial recomputed from memory) is
printed per variant: one group a row relies on in-order dispatch of programs for its exchange."""

import sys

import torch
import triton.testing
from kernels_triton import split_row as sr

sr.MAX_PROGRAMS_PER_SM = 128  # a scratch buffer with words for M * split programs (up to 16896)

which = sys.argv[1]
CASES = {
    "fwd": [
        ((256, 262144), torch.bfloat16),
        ((1024, 131072), torch.bfloat16),
        ((256, 262144), torch.float32),
        ((1024, 131072), torch.float32),
        ((64, 50257), torch.bfloat16),
    ],
    "bwd": [
        ((256, 262144), torch.bfloat16),
        ((1024, 131072), torch.bfloat16),
        ((4096, 32768), torch.float32),
        ((1024, 131072), torch.float32),
        ((256, 262144), torch.float32),
    ],
}[which]
for shape, dtype in CASES:
    torch.manual_seed(0)
    x = torch.randn(shape, device="cuda").to(dtype)
    out = torch.empty_like(x)
    sms = sr._device(x.device).sms
    if which == "fwd":
        ref = torch.softmax(x.double(), -1)
        args = (x, out)
        run = sr.forward
        sizes = ((8192, 4), (4096, 2), (4096, 4))
    else:
        y = torch.softmax(x.float(), -1).to(dtype)
        dy = torch.randn(shape, device="cuda").to(dtype)
        ref = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
        args = (y, dy, out)
        run = sr.backward
        sizes = ((4096, 4), (2048, 2), (8192, 8))
    variants = {"default": None}
    for chunk, warps in sizes:
        split = -(-shape[1] // chunk)
        per_sm = -(-shape[0] * split // sms)
        if per_sm * sms // split >= shape[0] and shape[0] * split <= 16896:
            variants[f"rows {chunk}/{warps}"] = sr.SplitConfig(
                chunk, warps, programs_per_sm=per_sm, prefetch=False
            )
    times = {k: [] for k in variants}
    info = {}
    for _ in range(2):
        for name, cfg in variants.items():
            out.fill_(float("nan"))
            before = sr.fallback_count()
            run(*args, config=cfg)
            torch.cuda.synchronize()
            err = (out.double() - ref).abs().max().item()
            plan = sr._plan(which, [*args], cfg, None)
            ms = triton.testing.do_bench(
                lambda cfg=cfg: run(*args, config=cfg), warmup=25, rep=200, return_mode="median"
            )
            torch.cuda.synchronize()
            fb = sr.fallback_count() - before
            info[name] = (
                f"{plan.config.chunk}/{plan.config.num_warps}{'p' if plan.config.prefetch else ''} "
                f"G={plan.groups} split={plan.split} err={err:.1e}{'' if err < 1e-2 else ' BAD'} fallbacks={fb}"
            )
            times[name].append(ms * 1e3)
    base_us = min(times["default"])
    for name in variants:
        t = min(times[name])
        print(
            f"{which} {shape[0]}x{shape[1]} {str(dtype)[6:]:8s} {name:14s} {t:7.1f} us "
            f"({'/'.join(f'{v:.1f}' for v in times[name])}) x{t / base_us:.3f}  {info[name]}",
            flush=True,
        )
