# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/cuda-short-rows/README.md), run from the repository root as .probes/short_rows.py.
"""Device time of CUDA launches built by hand: v3 forward and 06 fused backward at rows of 600 over
(threads per row, packs a thread, rows a block), and the 04 cluster forward at long rows over
threads a block. Every candidate is first checked against float64 on sampled rows (output
NaN-poisoned). labtools.bench.time_cuda: L2 flushed, inputs rotated, median; auto's plan first."""

import math

import numpy as np
import torch
from kernels_cuda import softmax_backward as sb
from kernels_cuda import softmax_variants as sm
from kernels_cuda.codegen import Spec
from labtools.bench import l2_bytes, n_input_sets, time_cuda

DEV = 0
stream = None


def fused(dtype, tpr, items, rpb, bwd):
    vec = sm.full_vec(dtype)
    consts = (("TPR", tpr), ("RPB", rpb), ("ITEMS", items), ("VEC", vec))
    spec = (
        Spec("06_softmax_backward.cu", "softmax_backward_fused", dtype, consts)
        if bwd
        else Spec("03_softmax_fused.cu", "softmax_fused", dtype, consts)
    )
    return sm.Launch(spec, grid=0, block=tpr * rpb)


def inputs(M, N, dtype, bwd):
    tdt = getattr(torch, dtype)
    nbytes = (3 if bwd else 2) * M * N * tdt.itemsize
    sets = []
    for k in range(n_input_sets(nbytes, l2_bytes())):
        g = torch.Generator(device="cuda").manual_seed(k)
        x = torch.randn((M, N), generator=g, device="cuda")
        if bwd:
            dy = torch.randn((M, N), generator=g, device="cuda").to(tdt)
            sets.append((torch.softmax(x, -1).to(tdt), dy, torch.empty_like(dy)))
        else:
            sets.append((x.to(tdt), torch.empty((M, N), dtype=tdt, device="cuda")))
    return sets


def runner(launch, M, N, bwd):
    rpb = dict(launch.spec.constants).get("RPB", 1)
    grid = launch.grid or math.ceil(M / rpb)
    launch = sm.Launch(launch.spec, grid, launch.block, launch.shared_mem, launch.extra)
    if bwd:
        packed = sb._packed(launch, DEV, M, N, (N, N, N))
        return lambda y, dy, dx: packed(
            torch.cuda.current_stream().cuda_stream, y.data_ptr(), dy.data_ptr(), dx.data_ptr()
        )
    packed = sm._packed(launch, DEV, N, N, M, N)
    return lambda x, y: packed(torch.cuda.current_stream().cuda_stream, x.data_ptr(), y.data_ptr())


def check(run, args, bwd) -> float:
    out = args[-1]
    out.fill_(math.nan)
    run(*args)
    rows = sorted({0, out.shape[0] - 1, *np.linspace(0, out.shape[0] - 1, 8).astype(int).tolist()})
    if bwd:
        y, dy = (a[rows].double() for a in args[:2])
        ref = y * (dy - (y * dy).sum(-1, keepdim=True))
    else:
        ref = torch.softmax(args[0][rows].double(), -1)
    return (out[rows].double() - ref).abs().max().item()


def case(name, M, N, dtype, bwd, launches):
    sets = inputs(M, N, dtype, bwd)
    line = []
    for label, launch in launches:
        run = runner(launch, M, N, bwd)
        err = check(run, sets[0], bwd)
        us = time_cuda(run, sets, time_cap_s=0.3).median_us
        line.append(f"{label} {us:7.2f}{'' if err < 2e-2 else f' BAD {err:.2g}'}")
    print(f"{name} {M}x{N} {dtype:8s} " + " | ".join(line), flush=True)
    del sets
    torch.cuda.empty_cache()


SHORT = {
    "float32": [(32, 5, 4), (32, 5, 8), (64, 3, 2), (64, 3, 4), (128, 2, 1), (128, 2, 2)],
    "bfloat16": [(16, 5, 8), (32, 3, 4), (32, 3, 8), (32, 4, 8), (64, 2, 2), (64, 2, 4)],
}
device = sm._device(DEV)
for M in (4096, 65536):
    for dtype in ("float32", "bfloat16"):
        vec = sm.full_vec(dtype)
        auto_f = sm.plan("auto", M, 600, dtype, vec, device)
        auto_b = sb.plan("auto", M, 600, dtype, vec, device)
        for bwd, auto in ((False, auto_f), (True, auto_b)):
            c = dict(auto.spec.constants)
            cands = [(f"auto {c['TPR']}x{c['ITEMS']}/{c['RPB']}", auto)]
            cands += [(f"{t}x{i}/{r}", fused(dtype, t, i, r, bwd)) for t, i, r in SHORT[dtype]]
            case("bwd" if bwd else "fwd", M, 600, dtype, bwd, cands)

for M, N in ((256, 262144), (1024, 131072)):
    for dtype in ("float32", "bfloat16"):
        vec = sm.full_vec(dtype)
        auto = sm.plan("auto", M, N, dtype, vec, device)
        c = dict(auto.spec.constants)
        cands = [(f"auto C={c['CLUSTER']} T={c['THREADS']}", auto)]
        for threads in (128, 512, 1024):
            spec = Spec(
                auto.spec.source,
                auto.spec.kernel,
                dtype,
                (("CLUSTER", c["CLUSTER"]), ("THREADS", threads), ("VEC", vec)),
            )
            cands.append((f"T={threads}", sm.Launch(spec, auto.grid, threads, auto.shared_mem, auto.extra)))
        case("fwd", M, N, dtype, False, cands)
