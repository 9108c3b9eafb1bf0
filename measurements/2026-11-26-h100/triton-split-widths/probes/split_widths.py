"""Device time of kernels_triton's dispatch (softmax / softmax_backward as a user calls them) and
of the split-row kernels over fewer, wider programs a row (SplitConfig chunk / warps, `p`: loading
the next row's chunk ahead), where kernels_triton trails QuACK at 16-128K columns. Each config is
checked against float64 first. do_bench: L2 flushed, median."""

import kernels_triton
import torch
import triton.testing
from kernels_triton import split_row as sr

CONFIGS = [(4096, 4), (8192, 4), (8192, 8), (16384, 8), (16384, 16), (32768, 16)]
CASES = [
    ("bwd", (4096, 32768), torch.float32),
    ("bwd", (4096, 32768), torch.bfloat16),
    ("bwd", (1024, 131072), torch.float32),
    ("fwd", (4096, 32768), torch.bfloat16),
    ("fwd", (1024, 131072), torch.float32),
    ("fwd", (1024, 131072), torch.bfloat16),
]


def bench(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=150, return_mode="median") * 1e3


for which, shape, dtype in CASES:
    torch.manual_seed(0)
    x = torch.randn(shape, device="cuda").to(dtype)
    out = torch.empty_like(x)
    if which == "fwd":
        ref = torch.softmax(x.double(), -1)
        args = (x, out)
        run = sr.forward
        public = lambda x=x: kernels_triton.softmax(x)  # noqa: E731
    else:
        y = torch.softmax(x.float(), -1).to(dtype)
        dy = torch.randn(shape, device="cuda").to(dtype)
        ref = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
        args = (y, dy, out)
        run = sr.backward
        public = lambda y=y, dy=dy: kernels_triton.softmax_backward(y, dy)  # noqa: E731
    err = (public().double() - ref).abs().max().item()
    line = [f"dispatch {bench(public):6.1f}{'' if err < 1e-2 else ' BAD'}"]
    for chunk, warps in CONFIGS:
        for prefetch in (False, True):
            cfg = sr.SplitConfig(chunk=chunk, num_warps=warps, prefetch=prefetch)
            label = f"{chunk}/{warps}{'p' if prefetch else ''}"
            out.fill_(float("nan"))
            try:
                run(*args, config=cfg)
            except ValueError:
                line.append(f"{label} n/a")
                continue
            err = (out.double() - ref).abs().max().item()
            us = bench(lambda cfg=cfg, run=run, args=args: run(*args, config=cfg))
            line.append(f"{label} {us:6.1f}{'' if err < 1e-2 else ' BAD'}")
    print(f"{which} {shape[0]}x{shape[1]} {str(dtype)[6:]:8s} " + " | ".join(line), flush=True)
