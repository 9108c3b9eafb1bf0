# A frozen probe of 2026-11-25 (measurements/2026-11-25-h100/peers-and-head/README.md), run from the repository root at 52203ac.
"""Host time of the head's pieces when called where the model calls it (after model.logits, caches
cold from the rest of the forward), variants taking turns per decode."""

import statistics as st
import sys
import time

import kernels_triton
import numpy as np
import torch
import torch.nn.functional as F
from minigpt_torch.weights import load

smod = sys.modules["kernels_triton.softmax"]

dev = torch.device("cuda")
model, tok, _ = load()
model = model.to(dev).eval()
ids0 = torch.from_numpy(np.array([tok.encode("Yesterday I")], dtype=np.int64)).to(dev)
STEPS = 22
with torch.no_grad():  # plan every shape
    for T in range(1, 40):
        kernels_triton.softmax_(torch.randn(1, T, model.config.vocab_size, device=dev), -1)
plans = smod._IN_PLACE
is_compiling = torch.compiler.is_compiling


def py_only(x, dim=-1):  # the fast path's Python work without the launch
    if (
        not is_compiling()
        and type(x) is torch.Tensor
        and type(dim) is int
        and x.is_contiguous()
        and not x.requires_grad
    ):
        plan = plans.get((x.shape, dim, x.dtype, x.get_device(), x.data_ptr() % 16, None))
        return plan


def launch_only(x, plan):
    plan(x, x)


VARIANTS = {
    "F.softmax": lambda x, plan: F.softmax(x, dim=-1),
    "x.softmax": lambda x, plan: x.softmax(-1),
    "softmax_": lambda x, plan: kernels_triton.softmax_(x, -1),
    "python_only": lambda x, plan: py_only(x),
    "launch_only": launch_only,
    "torch_mul_": lambda x, plan: x.mul_(1.0),
    "empty_like": lambda x, plan: torch.empty_like(x),
    "nothing": lambda x, plan: None,
}
names = list(VARIANTS)
acc = {n: [] for n in names}
with torch.no_grad():
    for r in range(240):
        k = r % len(names)
        order = names[k:] + names[:k]
        if (r // len(names)) % 2:
            order = order[::-1]
        for name in order:
            fn = VARIANTS[name]
            idx = ids0
            head = 0.0
            torch.cuda.synchronize()
            for _ in range(STEPS):
                logits = model.logits(idx)
                plan = plans.get((logits.shape, -1, logits.dtype, 0, 0, None))
                t1 = time.perf_counter()
                fn(logits, plan)
                t2 = time.perf_counter()
                head += t2 - t1
                p = torch.softmax(logits[:, -1], -1).cpu().numpy()
                idx = torch.cat([idx, torch.tensor([[int(p.argmax())]], device=dev)], 1)
            if r >= 16:
                acc[name].append(head / STEPS * 1e6)
for name in names:
    print(
        f"{name:12s} {st.median(acc[name]):7.2f} us cold (quartiles {st.quantiles(acc[name], n=4)[0]:.2f}-{st.quantiles(acc[name], n=4)[2]:.2f})",
        flush=True,
    )
# the same calls hot: back to back on one tensor
x = torch.randn(1, 20, model.config.vocab_size, device=dev)
plan = plans.get((x.shape, -1, x.dtype, 0, 0, None))
for name in names:
    fn = VARIANTS[name]
    for _ in range(100):
        fn(x, plan)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(2000):
        fn(x, plan)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    print(f"{name:12s} {(t1 - t0) / 2000 * 1e6:7.2f} us hot", flush=True)
