# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/split-row-first-call/README.md), run from the repository root as .probes/first_call.py.
"""Probe: a fresh process's first forward and first backward at 8x128257 bf16 (split-row kernels)."""

import time

t0 = time.perf_counter()
import kernels_triton  # noqa: E402
import torch  # noqa: E402

x = torch.randn(8, 128257, device="cuda", dtype=torch.bfloat16)
dy = torch.randn_like(x)
torch.cuda.synchronize()
t1 = time.perf_counter()
y = kernels_triton.softmax(x)
torch.cuda.synchronize()
t2 = time.perf_counter()
dx = kernels_triton.softmax_backward(y, dy)
torch.cuda.synchronize()
t3 = time.perf_counter()
err = (y.double() - torch.softmax(x.double(), -1)).abs().max().item()
print(
    f"import and setup {t1 - t0:.3f} s, first forward {t2 - t1:.3f} s, first backward {t3 - t2:.3f} s (forward max err {err:.1e})"
)
