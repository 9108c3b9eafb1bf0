# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/backward-dy-in-registers/README.md), run from the repository root as .probes/fused_configs.py.
"""Device time of the CUDA v3 forward and the fused backward at rows of 600 under AutoConfig /
BackwardConfig packs-per-thread settings (which set threads per row). do_bench: L2 flushed, median."""

import sys
from dataclasses import replace

import kernels_cuda  # noqa: F401
import kernels_cuda.softmax_backward  # noqa: F401
import torch
import triton.testing

sm = sys.modules["kernels_cuda.softmax_variants"]
sb = sys.modules["kernels_cuda.softmax_backward"]
for M in (4096, 16384, 65536):
    for dtype in (torch.float32, torch.bfloat16):
        torch.manual_seed(0)
        x = torch.randn(M, 600, device="cuda").to(dtype)
        y = torch.softmax(x.float(), -1).to(dtype)
        dy = torch.randn(M, 600, device="cuda", dtype=dtype)
        ref_f = torch.softmax(x.double(), -1)
        ref_b = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
        fw, bw = [], []
        for packs in (1, 2, 3, 4, 5, 8):
            sm.set_auto_config(fused_packs_f32=packs, fused_packs_16bit=packs)
            dt = str(dtype)[6:]
            L = sm.plan("auto", M, 600, dt, 16 // x.element_size(), sm._device(0))
            c = dict(L.spec.constants)
            out = sm.softmax(x)
            ok = (out.double() - ref_f).abs().max().item() < 1e-2
            ms = triton.testing.do_bench(lambda x=x: sm.softmax(x), warmup=25, rep=150, return_mode="median")
            fw.append(f"p{packs} {c['TPR']}x{c['ITEMS']} {ms * 1e3:5.2f}{'' if ok else ' BAD'}")
            sb.AUTO = replace(sb.BackwardConfig(), fused_packs_f32=packs, fused_packs_16bit=packs)
            sb._dense_calls.clear()
            L = sb.plan("auto", M, 600, dt, 16 // x.element_size(), sm._device(0), sb.AUTO)
            c = dict(L.spec.constants)
            out = sb.softmax_backward(y, dy)
            ok = (out.double() - ref_b).abs().max().item() < 1e-2
            ms = triton.testing.do_bench(
                lambda y=y, dy=dy: sb.softmax_backward(y, dy), warmup=25, rep=150, return_mode="median"
            )
            bw.append(f"p{packs} {c['TPR']}x{c['ITEMS']} {ms * 1e3:5.2f}{'' if ok else ' BAD'}")
        print(f"fwd {M}x600 {dt:8s} " + " | ".join(fw), flush=True)
        print(f"bwd {M}x600 {dt:8s} " + " | ".join(bw), flush=True)
