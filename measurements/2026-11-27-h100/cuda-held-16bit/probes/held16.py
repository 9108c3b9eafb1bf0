# A probe: not part of any package.
# ruff: noqa: B023 -- every lambda here is called within the iteration that made it
"""Two questions about kernels_cuda's forward launches, each form beside kernels_triton's forward,
all timed in turns (labtools.bench.time_in_turns: CUDA events, L2 flushed by a write, median of
the merged rounds).

    held16.py cluster SHAPES DTYPES   # 04: the chunk in shared memory (the package's plan) against
                                      # held in registers with fp32 exponentials (KL_ITEMS > 0)
    held16.py fused SHAPES DTYPES     # v3's launch shapes (threads a row x packs x rows a block)
    held16.py barrier SHAPES DTYPES   # v3's merge barrier: the row's warps or the whole block

Every form's output is NaN-poisoned, then checked against float64 on sampled rows with extremes
first, last and repeated; its largest error is printed beside F.softmax's."""

import math
import os
import sys

import kernels_triton
import numpy as np
import torch
from kernels_cuda import codegen
from kernels_cuda import softmax_variants as sv
from kernels_cuda.codegen import Spec
from labtools import bench

DEV = 0
ROUNDS = 4
TIME_CAP_S = float(os.environ.get("TIME_CAP_S", 2.0))


def inputs(M, N, dtype):
    tdt = getattr(torch, dtype)
    sets = []
    for k in range(bench.n_input_sets(2 * M * N * tdt.itemsize, bench.l2_bytes())):
        g = torch.Generator(device="cuda").manual_seed(k)
        x = torch.randn((M, N), generator=g, device="cuda") * 4
        top = x.amax(-1) + 1  # maxima first, last and repeated
        x[::3, 0] = top[::3]
        x[1::3, -1] = top[1::3]
        x[2::3, N // 3] = x[2::3, 2 * N // 3] = top[2::3]
        sets.append((x.to(tdt), torch.empty((M, N), dtype=tdt, device="cuda")))
    return sets


def error(fn, x, y) -> float:
    y.fill_(math.nan)
    out = fn(x, y)
    out = y if out is None else out
    torch.cuda.synchronize()
    M = x.shape[0]
    rows = sorted({r for r in (0, 1, 2, M - 1) if r < M} | set(np.linspace(0, M - 1, 8).astype(int).tolist()))
    return (out[rows].double() - torch.softmax(x[rows].double(), -1)).abs().max().item()


def packed_fn(launch, M, N):
    packed = sv._packed(launch, DEV, N, N, M, N)
    return lambda x, y: packed(torch.cuda.current_stream().cuda_stream, x.data_ptr(), y.data_ptr())


def compare(M, N, dtype, forms):
    sets = inputs(M, N, dtype)
    forms = dict(forms, triton=lambda x, y: kernels_triton.softmax(x))
    notes = {}
    for name, fn in forms.items():
        notes[name] = f"err {error(fn, *sets[0]):.1e}"
    notes["triton"] += f" (F.softmax {error(lambda x, y: torch.softmax(x, -1), *sets[0]):.1e})"
    timings = bench.time_in_turns(
        [(fn, sets) for fn in forms.values()], "cuda", ROUNDS, time_cap_s=TIME_CAP_S
    )
    gb = 2 * M * N * getattr(torch, dtype).itemsize / 1e3
    first = None
    print(f"{M}x{N} {dtype}", flush=True)
    for (name, _), t in zip(forms.items(), timings):
        us = t.median_us
        first = first or us
        print(
            f"  {name:>26} {us:8.2f} us {gb / us:6.0f} GB/s /first {us / first:.3f}  {notes[name]}",
            flush=True,
        )
    del sets
    torch.cuda.empty_cache()


def resources(spec) -> str:
    r = codegen.compile_spec(spec, codegen.device_arch(DEV)).resources
    return f"{r.registers} regs" if r else "?"


def cluster(M, N, dtype, device):
    base = sv.plan("auto", M, N, dtype, sv.full_vec(dtype), device)
    if base.spec.kernel != "softmax_cluster":
        print(f"{M}x{N} {dtype}: the package plans {base.spec.name}, not 04", flush=True)
        return
    c, chunk = dict(base.spec.constants)["CLUSTER"], base.extra[0]
    need = math.ceil(chunk / sv.full_vec(dtype) / sv.CLUSTER_THREADS)
    items = 1 << (need - 1).bit_length()
    held = sv.Launch(sv.cluster_spec(dtype, c, items), base.grid, base.block, 0, base.extra)
    label = dict(base.spec.constants)["ITEMS"]
    forms = {
        f"package C={c} items={label} {resources(base.spec)}": packed_fn(base, M, N),
        f"held C={c} items={items} {resources(held.spec)}": packed_fn(held, M, N),
    }
    compare(M, N, dtype, forms)


def fused(M, N, dtype, device):
    vec = sv.full_vec(dtype)
    base = sv.plan("auto", M, N, dtype, vec, device)
    k = dict(base.spec.constants)
    forms = {f"package {k['TPR']}x{k['ITEMS']}/{k['RPB']} {resources(base.spec)}": packed_fn(base, M, N)}
    packs = N // vec
    for tpr in (32, 64, 128, 256):
        items = math.ceil(packs / tpr)
        if items > 8:
            continue
        for rpb in sorted({1, max(1, 128 // tpr), max(1, 256 // tpr)}):
            if (tpr, items, rpb) == (k["TPR"], k["ITEMS"], k["RPB"]):
                continue
            spec = Spec(
                "03_softmax_fused.cu",
                "softmax_fused",
                dtype,
                (("TPR", tpr), ("RPB", rpb), ("ITEMS", items), ("VEC", vec)),
            )
            launch = sv.Launch(spec, grid=min(math.ceil(M / rpb), sv.MAX_GRID), block=tpr * rpb)
            forms[f"{tpr}x{items}/{rpb} {resources(spec)}"] = packed_fn(launch, M, N)
    compare(M, N, dtype, forms)


def barrier(M, N, dtype, device):
    """v3 with its merge's barrier per row (bar.sync 1 + slot, TPR: the package's form) against the
    whole block's (__syncthreads: KL_ROW_BARRIER=0), at the package's launch and at 64 threads a
    row in 256-thread blocks."""
    vec = sv.full_vec(dtype)
    base = sv.plan("auto", M, N, dtype, vec, device)
    k = dict(base.spec.constants)
    forms = {}
    shapes = {(k["TPR"], k["ITEMS"], k["RPB"])}
    if N // vec >= 256:
        shapes.add((64, math.ceil(N // vec / 64), max(1, 256 // 64)))
    for tpr, items, rpb in sorted(shapes, reverse=True):
        for row_barrier in (1, 0):
            consts = (
                ("TPR", tpr),
                ("RPB", rpb),
                ("ITEMS", items),
                ("VEC", vec),
                ("ROW_BARRIER", row_barrier),
            )
            spec = Spec("03_softmax_fused.cu", "softmax_fused", dtype, consts)
            launch = sv.Launch(spec, grid=min(math.ceil(M / rpb), sv.MAX_GRID), block=tpr * rpb)
            name = f"{tpr}x{items}/{rpb} {'row' if row_barrier else 'block'} barrier {resources(spec)}"
            forms[name] = packed_fn(launch, M, N)
    compare(M, N, dtype, forms)


def main():
    what, shapes, dtypes = sys.argv[1], sys.argv[2], sys.argv[3]
    device = sv._device(DEV)
    for shape in shapes.split(","):
        M, N = (int(v) for v in shape.split("x"))
        for dtype in dtypes.split(","):
            {"cluster": cluster, "fused": fused, "barrier": barrier}[what](M, N, dtype, device)


if __name__ == "__main__":
    main()
