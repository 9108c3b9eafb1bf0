# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/triton-registers-grid-clusters/README.md), run from the repository root as .probes/split_maxnreg.py.
# ruff: noqa: E741, B023, F401 -- kept as it ran
"""Device time of kernels_triton.split_row forward and backward with and without a register cap
(SplitConfig.max_registers), checked against float64 first. do_bench: L2 flushed, median; the
variants of a case alternate over two rounds."""

import dataclasses
import sys

import torch
import triton.testing
from kernels_triton import split_row as sr

which = sys.argv[1]
CASES = {
    "fwd": [
        ((256, 262144), torch.bfloat16),
        ((1024, 131072), torch.bfloat16),
        ((2048, 65536), torch.bfloat16),
        ((256, 262144), torch.float16),
        ((64, 50257), torch.bfloat16),
        ((8, 128257), torch.bfloat16),
        ((256, 262144), torch.float32),
        ((1024, 131072), torch.float32),
    ],
    "bwd": [
        ((256, 262144), torch.bfloat16),
        ((1024, 131072), torch.bfloat16),
        ((64, 50257), torch.bfloat16),
        ((4096, 32768), torch.float32),
        ((1024, 131072), torch.float32),
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
        base = sr._default_config("fwd", *shape, sr._device(x.device).sms)
    else:
        y = torch.softmax(x.float(), -1).to(dtype)
        dy = torch.randn(shape, device="cuda").to(dtype)
        ref = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
        args = (y, dy, out)
        run = sr.backward
        base = sr._default_config("bwd", *shape, sr._device(x.device).sms)
    variants = {"default": base, "cap128": dataclasses.replace(base, max_registers=128)}
    if dtype == torch.float32 and which == "bwd":
        variants["pf+cap128"] = dataclasses.replace(base, max_registers=128, prefetch=True)
    times = {k: [] for k in variants}
    info = {}
    for _ in range(2):
        for name, cfg in variants.items():
            out.fill_(float("nan"))
            run(*args, config=cfg)
            err = (out.double() - ref).abs().max().item()
            plan = sr._plan(which, [*args], cfg, None)
            sm = sr._device(x.device).sms
            compiled = sr._compiled(
                plan.kernel,
                [
                    *args,
                    sr._scratch(x.device),
                    *shape,
                    *(t.stride(0) for t in args),
                    plan.groups,
                    plan.split,
                    sr._scratch(x.device).numel(),
                ],
                plan.meta,
                x.device,
            )
            waves = -(-shape[0] // plan.groups)
            info[name] = (
                f"{plan.config.chunk}/{plan.config.num_warps}{'p' if plan.config.prefetch else ''} "
                f"regs {compiled.n_regs} spills {compiled.n_spills} {plan.programs_per_sm}/SM "
                f"G={plan.groups} split={plan.split} waves={waves} err={err:.1e}{'' if err < 1e-2 else ' BAD'}"
            )
            ms = triton.testing.do_bench(
                lambda cfg=cfg: run(*args, config=cfg), warmup=25, rep=200, return_mode="median"
            )
            times[name].append(ms * 1e3)
    base_us = min(times["default"])
    for name in variants:
        t = min(times[name])
        print(
            f"{which} {shape[0]}x{shape[1]} {str(dtype)[6:]:8s} {name:10s} {t:7.1f} us "
            f"({'/'.join(f'{v:.1f}' for v in times[name])}) x{t / base_us:.3f}  {info[name]}",
            flush=True,
        )
print("fallbacks:", sr.fallback_count())
