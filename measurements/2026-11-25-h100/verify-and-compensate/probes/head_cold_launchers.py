# A frozen probe of 2026-11-25 (measurements/2026-11-25-h100/verify-and-compensate/README.md), run from the repository root at 07a0b05 as .probes/head_cold_launchers.py.
"""Host time of the LM head where the model calls it (right after model.logits, the caches
holding the rest of the forward), and back to back: Triton's launch (its C launcher,
cuLaunchKernelEx) against kernels_cuda's (cuda.bindings cuLaunchKernel on packed arguments)
and F.softmax. Variants take turns per decode, order rotated and reversed."""

import statistics as st
import sys
import time

import kernels_cuda
import kernels_triton
import numpy as np
import torch
import torch.nn.functional as F
from minigpt_torch.weights import load

tsm = sys.modules["kernels_triton.softmax"]
import kernels_cuda.softmax_variants as csm  # noqa: E402

dev = torch.device("cuda")
model, tok, _ = load()
model = model.to(dev).eval()
V = model.config.vocab_size
ids0 = torch.from_numpy(np.array([tok.encode("Yesterday I")], dtype=np.int64)).to(dev)
STEPS = 22
with torch.no_grad():  # plan every shape on both backends
    for T in range(1, 40):
        x = torch.randn(1, T, V, device=dev)
        ref = torch.softmax(x.double(), -1)
        y1 = kernels_triton.softmax_(x.clone(), -1)
        y2 = kernels_cuda.softmax(x)
        assert (y1.double() - ref).abs().max() < 1e-6 and (y2.double() - ref).abs().max() < 1e-6


def triton_plan(x):
    return tsm._IN_PLACE.get((x.shape, -1, x.dtype, 0, x.data_ptr() % 16, None))


def cuda_run(x):
    return csm._torch_calls[(x.shape, x.dtype, 0, x.data_ptr() & 15, -1, "auto")].dense_run


stream = csm._current_stream
spare = {}


def cuda_launch(x, tp, cr):
    y = spare.get(x.shape)
    if y is None:
        y = spare[x.shape] = torch.empty_like(x)
    p, q = x.data_ptr(), y.data_ptr()
    t1 = time.perf_counter()
    cr(stream(0), p, q)
    return time.perf_counter() - t1


def timed(fn):
    def run(x, tp, cr):
        t1 = time.perf_counter()
        fn(x, tp, cr)
        return time.perf_counter() - t1

    return run


VARIANTS = {
    "F.softmax": timed(lambda x, tp, cr: F.softmax(x, dim=-1)),
    "triton softmax_": timed(lambda x, tp, cr: kernels_triton.softmax_(x, -1)),
    "triton softmax": timed(lambda x, tp, cr: kernels_triton.softmax(x, -1)),
    "cuda softmax": timed(lambda x, tp, cr: kernels_cuda.softmax(x)),
    "triton launch only": timed(lambda x, tp, cr: tp(x, x)),
    "cuda launch only": cuda_launch,
    "empty_like": timed(lambda x, tp, cr: torch.empty_like(x)),
    "nothing": timed(lambda x, tp, cr: None),
}
names = list(VARIANTS)
acc = {n: [] for n in names}
with torch.no_grad():
    for r in range(120):
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
                tp, cr = triton_plan(logits), cuda_run(logits)
                head += fn(logits, tp, cr)
                p = torch.softmax(logits[:, -1], -1).cpu().numpy()
                idx = torch.cat([idx, torch.tensor([[int(p.argmax())]], device=dev)], 1)
            if r >= 16:
                acc[name].append(head / STEPS * 1e6)
for name in names:
    q = st.quantiles(acc[name], n=4)
    print(f"{name:20s} {st.median(acc[name]):7.2f} us cold (quartiles {q[0]:.2f}-{q[2]:.2f})", flush=True)
x = torch.randn(1, 20, V, device=dev)
tp, cr = triton_plan(x), cuda_run(x)
for name in names:
    fn = VARIANTS[name]
    for _ in range(200):
        fn(x, tp, cr)
    torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        tot = 0.0
        for _ in range(1000):
            tot += fn(x, tp, cr)
        torch.cuda.synchronize()
        ts.append(tot / 1000 * 1e6)
    print(f"{name:20s} {st.median(ts):7.2f} us hot", flush=True)
