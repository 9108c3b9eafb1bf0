"""Device time of v3 forward and 06 fused backward launches built by hand at rows of 600 over
(threads per row, packs a thread, rows a block), under three states of the L2 before each timed
call: flushed by writing (labtools' default; the L2 is left full of dirty lines), flushed by
reading (clean lines), not flushed (inputs still rotated past the L2). Every candidate is first
checked against float64 on sampled rows (output NaN-poisoned). labtools.bench.time_cuda, median,
best of two rounds; auto's plan first."""

import math

import numpy as np
import torch
from kernels_cuda import softmax_backward as sb
from kernels_cuda import softmax_variants as sm
from kernels_cuda.codegen import Spec
from labtools import bench
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


flush_buf = torch.empty(2 * l2_bytes() // 4, dtype=torch.float32, device="cuda")
sink = torch.empty(1, device="cuda")


def read_flush(self):
    torch.sum(flush_buf, dim=0, keepdim=True, out=sink)


write_flush = bench._CudaClock.flush_l2
MODES = {
    "write": (write_flush, bench.DEFAULT_FLUSH_BYTES),
    "read": (read_flush, bench.DEFAULT_FLUSH_BYTES),
    "none": (write_flush, 0),
}


def case(name, M, N, dtype, bwd, launches):
    sets = inputs(M, N, dtype, bwd)
    runs = []
    for label, launch in launches:
        run = runner(launch, M, N, bwd)
        err = check(run, sets[0], bwd)
        runs.append((f"{label}{'' if err < 2e-2 else f' BAD {err:.2g}'}", run))
    for mode, (flush, nbytes) in MODES.items():
        bench._CudaClock.flush_l2 = flush
        best = {}
        for _ in range(2):
            for label, run in runs:
                us = time_cuda(run, sets, time_cap_s=0.2, flush_bytes=nbytes).median_us
                best[label] = min(us, best.get(label, us))
        print(
            f"{name} {M}x{N} {dtype:8s} flush={mode:5s} "
            + " | ".join(f"{k} {v:7.2f}" for k, v in best.items()),
            flush=True,
        )
    bench._CudaClock.flush_l2 = write_flush
    del sets
    torch.cuda.empty_cache()


SHORT = {
    "float32": [(32, 5, 4), (32, 5, 8), (64, 3, 2), (64, 3, 4), (128, 2, 1)],
    "bfloat16": [(32, 3, 4), (32, 3, 8), (64, 2, 2), (64, 2, 1)],
}
device = sm._device(DEV)
for M in (4096, 16384, 65536):
    for dtype in ("float32", "bfloat16"):
        vec = sm.full_vec(dtype)
        auto_f = sm.plan("auto", M, 600, dtype, vec, device)
        auto_b = sb.plan("auto", M, 600, dtype, vec, device)
        for bwd, auto in ((False, auto_f), (True, auto_b)):
            c = dict(auto.spec.constants)
            cands = [(f"auto {c['TPR']}x{c['ITEMS']}/{c['RPB']}", auto)]
            cands += [(f"{t}x{i}/{r}", fused(dtype, t, i, r, bwd)) for t, i, r in SHORT[dtype]]
            case("bwd" if bwd else "fwd", M, 600, dtype, bwd, cands)
