# A frozen probe of 2026-11-25 (measurements/2026-11-25-h100/verify-and-compensate/README.md), run from the repository root at 07a0b05 as .probes/compensated_cost.py.
"""Device time of the split-row forward on fp32 with compensated sums (the default) and with plain
ones, and each one's error against float64 on rows whose maximum is last; torch's error beside."""

import dataclasses
import statistics as st

import torch
from kernels_triton import split_row as sr
from triton.testing import do_bench

for m, n in ((1024, 131072), (256, 262144), (8, 128257), (64, 50257), (1, 262144)):
    if not sr.applies(m, n, torch.float32, "cuda"):
        print(f"{m}x{n}: not a split-row shape here")
        continue
    x = torch.randn(m, n, device="cuda") * 3
    x[:, -1] = x.max(dim=1).values + 5
    ref = torch.softmax(x.double(), -1)
    torch_err = (torch.softmax(x, -1).double() - ref).abs().max().item()
    line = f"{m}x{n} fp32: torch err {torch_err:.3g};"
    for comp in (False, True):
        base = sr._default_config("fwd", m, n, sr._device(x.device).sms)
        cfg = dataclasses.replace(base, compensated=comp)
        y = torch.full_like(x, float("nan"))
        sr.forward(x, y, config=cfg)
        err = (y.double() - ref).abs().max().item()
        times = [do_bench(lambda: sr.forward(x, y, config=cfg), warmup=25, rep=200) for _ in range(3)]  # noqa: B023 (called at once)
        line += f"  {'compensated' if comp else 'plain'} {st.median(times) * 1e3:.1f} us err {err:.3g}"
    print(line, flush=True)
