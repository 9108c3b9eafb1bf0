# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/backward-dy-in-registers/README.md), run from the repository root as .probes/bwd_configs.py.
"""Device time of kernels_cuda.softmax_backward's cluster kernel under BackwardConfig variants
(chunk elements a block, dy in registers or not), checked against float64 first. do_bench:
L2 flushed, median."""

import sys
from dataclasses import replace

import kernels_cuda.softmax_backward  # noqa: F401
import torch
import triton.testing

sb = sys.modules["kernels_cuda.softmax_backward"]
sm = sb.sm
CONFIGS = [(4096, True), (8192, True), (16384, True), (16384, False), (32768, True)]
for shape in ((1024, 131072), (4096, 32768), (256, 262144), (2048, 65536)):
    for dtype in (torch.float32, torch.bfloat16):
        torch.manual_seed(0)
        y = torch.softmax(torch.randn(shape, device="cuda"), -1).to(dtype)
        dy = torch.randn(shape, device="cuda", dtype=dtype)
        ref = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
        line = []
        for elems, regs in CONFIGS:
            sb.AUTO = replace(sb.BackwardConfig(), cluster_chunk_elems=elems, cluster_dy_in_registers=regs)
            sb._dense_calls.clear()
            dt = str(dtype)[6:]
            launch = sb.plan(
                "auto", shape[0], shape[1], dt, 16 // y.element_size(), sm._device(0), sb.AUTO, True
            )
            dx = sb.softmax_backward(y, dy)
            err = (dx.double() - ref).abs().max().item()
            ms = triton.testing.do_bench(
                lambda y=y, dy=dy: sb.softmax_backward(y, dy), warmup=25, rep=150, return_mode="median"
            )
            c = dict(launch.spec.constants)
            line.append(
                f"{elems // 1024}K{'r' if regs else 's'} C={launch.spec.cluster} R={c.get('DY_PACKS', '-')} {ms * 1e3:6.1f}{'' if err < 1e-2 else ' BAD'}"
            )
        print(f"{shape[0]}x{shape[1]} {dt:8s} " + " | ".join(line), flush=True)
