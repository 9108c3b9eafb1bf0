# A probe: not part of any package.
# ruff: noqa: B023 -- every lambda here is called within the iteration that made it
"""kernels_triton's backward at its committed pick and at other warps per program (one pass over
whole rows), beside torch.compile's and kernels_cuda's backward, in turns.

    bwd_warps.py SHAPE DTYPE FORMS [ROUNDS]
    e.g. bwd_warps.py 16384x4096 bfloat16 pick,4096:4,4096:8,4096:32,compile,cuda 4
    (a form: pick, BLOCK:WARPS, compile or cuda; the first is the baseline of the ratios)

Device time: triton.testing.do_bench (L2 flushed by a write), each round's trimmed mean, median of
rounds. Each form's dx is checked against float64 first."""

import sys

import torch
import triton.testing
from kernels_triton import SoftmaxConfig, softmax_backward
from labtools import registry


def trimmed_mean(values):
    kept = sorted(values)[len(values) // 10 : len(values) - len(values) // 10]
    return sum(kept) / len(kept)


def runner(form, y, dy):
    if form == "pick":
        return lambda: softmax_backward(y, dy)
    if form in ("compile", "cuda"):
        name = "torch.compile.softmax_backward.cuda" if form == "compile" else "cuda.softmax_backward"
        fn = registry.get(name).fn
        return lambda: fn(y, dy)
    block, warps = (int(v) for v in form.split(":"))
    config = SoftmaxConfig(block, warps)
    return lambda: softmax_backward(y, dy, config=config)


def main():
    m, n = (int(v) for v in sys.argv[1].split("x"))
    dtype = getattr(torch, sys.argv[2])
    forms = sys.argv[3].split(",")
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    registry.load_plugins()
    y = torch.softmax(torch.randn((m, n), device="cuda") * 3, -1).to(dtype)
    dy = torch.randn((m, n), device="cuda").to(dtype)
    yd, dyd = y.double(), dy.double()
    ref = yd * (dyd - (yd * dyd).sum(-1, keepdim=True))
    errs = {}
    for form in forms:
        errs[form] = (runner(form, y, dy)().double() - ref).abs().max().item()
    del ref, yd, dyd
    times = {form: [] for form in forms}
    for r in range(rounds):
        for form in forms[:: 1 if r % 2 == 0 else -1]:
            fn = runner(form, y, dy)
            times[form].append(trimmed_mean(triton.testing.do_bench(fn, return_mode="all")) * 1e3)
    gb = 3 * y.numel() * y.element_size() / 1e3
    first = None
    print(f"bwd {m}x{n} {sys.argv[2]}", flush=True)
    for form, ts in times.items():
        t = sorted(ts)[len(ts) // 2]
        first = first or t
        print(
            f"  {form:>9} {t:8.2f} us {gb / t:6.0f} GB/s /first {t / first:.3f}  err {errs[form]:.1e}"
            f"  rounds {' '.join(f'{v:.2f}' for v in ts)}",
            flush=True,
        )


if __name__ == "__main__":
    main()
