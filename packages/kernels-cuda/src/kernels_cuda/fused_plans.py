"""Planning v3, the row-in-registers kernel (03_softmax_fused.cu): a ladder of (threads a row,
packs a thread) shapes, and the few-rows shape for small fp32 launches.

Plain Python over shapes (no GPU). The fused backward (backward_plans.py) plans with the same
ladder, capped.
"""

from __future__ import annotations

import math
from dataclasses import replace

from kernels_cuda import arrays
from kernels_cuda.codegen import Spec
from kernels_cuda.launch_types import Device, RowPlan

# Threads a v3 block has when a row needs fewer (RPB rows a block), by element size: 16-bit rows
# of a few hundred elements run faster in 128-thread blocks, fp32 ones in 256-thread blocks
# (experiments/notes/kernels-cuda.md).
FUSED_BLOCK = {4: 256, 2: 128}
# Threads an SM a launch of few fp32 rows aims for (AutoConfig.few_rows_per_sm): one wave of them
# is resident at up to 64 registers a thread. Those launches run in FEW_ROWS_BLOCK-thread blocks.
FEW_ROWS_THREADS_PER_SM = 1024
FEW_ROWS_BLOCK = 128
FUSED_MAX_TPR = 1024


def fused_items_max(vec: int) -> int:
    """Packs per thread v3 holds at most: 8 raw 16-byte packs (32 registers, for every dtype), or
    16 element-wide ones (16 loads in flight already; 32 made ptxas spill a little)."""
    return 8 if vec > 1 else 16


def fused_capacity(vec: int) -> int:
    """The longest row v3 holds: 1024 threads x 8 packs of 16 bytes (32768 fp32, 65536 bf16
    elements), 16384 elements without 16-byte packs."""
    return FUSED_MAX_TPR * fused_items_max(vec) * vec


def fused_packs(dtype: str, vec: int, cfg) -> int:
    """Packs a v3 thread holds before its row gets more threads (element-wide packs: as many as it can)."""
    if vec == 1:
        return fused_items_max(vec)
    return cfg.fused_packs_f32 if arrays.ITEMSIZE[dtype] == 4 else cfg.fused_packs_16bit


def fused_ladder(vec: int, packs: int) -> list[tuple[int, int]]:
    """v3's (threads per row, packs per thread) configurations, in order of capacity: part of a
    warp for tiny rows; one warp with 1, 2, 4 .. below `packs` packs, then `packs`; more warps,
    up to 256, with `packs` each; 256 threads with more packs, up to the maximum; then 512 and 1024 threads with the maximum."""
    items_max = fused_items_max(vec)
    doubling = [1 << k for k in range(items_max.bit_length())]
    sub_warp = [(t, 1) for t in (1, 2, 4, 8, 16)]
    warp = [(32, i) for i in doubling if i < packs] + [(32, packs)]
    warps = [(t, packs) for t in (64, 128, 256)]
    more_packs = [(256, i) for i in doubling if packs < i <= items_max]
    most = [(t, items_max) for t in (512, 1024)]
    return sub_warp + warp + warps + more_packs + most


def fused_rows_per_block(dtype: str, tpr: int, block: int | None = None) -> int:
    """Rows a block of the row-in-registers kernels (v3, and the fused backward) holds at TPR
    threads a row: `block` (by default FUSED_BLOCK) threads a block where rows need fewer."""
    return max(1, (block or FUSED_BLOCK[arrays.ITEMSIZE[dtype]]) // tpr)


def fused_spec(dtype: str, tpr: int, items: int, vec: int, block: int | None = None, full: int = 0) -> Spec:
    """v3 at `tpr` threads a row of `items` packs each; `full`: how many of a thread's packs lie
    inside every row (no bounds check on those; `full_packs` from N)."""
    rpb = fused_rows_per_block(dtype, tpr, block)
    return Spec(
        "03_softmax_fused.cu",
        "softmax_fused",
        dtype,
        (("TPR", tpr), ("RPB", rpb), ("ITEMS", items), ("VEC", vec)) + ((("FULL", full),) if full else ()),
    )


def with_log(spec: Spec) -> Spec:
    """A row-in-registers kernel's `spec` (03, or 06's fused one) with its log_softmax epilogue
    (KL_LOG: log_softmax_op.registers_plan)."""
    return replace(spec, constants=spec.constants + (("LOG", 1),))


def few_rows_shape(
    M: int | None,
    N: int,
    dtype: str,
    vec: int,
    tpr: int,
    items: int,
    items_max: int,
    device: Device | None,
    rows_per_sm: int,
) -> tuple[int, int, int | None]:
    """(threads a row, packs a thread, threads a block or None) for a fused launch the ladder
    gave `tpr` x `items`. An fp32 launch of 16-byte packs and at most `rows_per_sm` rows an SM
    gets about FEW_ROWS_THREADS_PER_SM threads an SM in all (a warp a row at least, and no fewer
    than hold the row at `items_max` packs a thread), in FEW_ROWS_BLOCK-thread blocks. At a wave
    or two of short rows the time is the rows' DRAM round trip plus the instructions each SM
    issues after it: four warps a row issue four times a warp's reductions and run in two waves
    where one warp a row runs in one (experiments/notes/kernels-cuda.md, "Few rows, fewer
    threads"). Any other launch, and any launch planned for every M (M None: a row's threads
    would then depend on the batch), the ladder's, unchanged."""
    packs = N // vec
    if M is None or vec == 1 or arrays.ITEMSIZE[dtype] != 4 or device is None or M > rows_per_sm * device.sms:
        return tpr, items, None
    want = 1 << max(5, (FEW_ROWS_THREADS_PER_SM * device.sms // M).bit_length() - 1)
    fewest = 32
    while fewest * items_max < packs:
        fewest *= 2
    few = min(tpr, max(want, fewest))
    if few == tpr:
        return tpr, items, None
    return few, math.ceil(packs / few), FEW_ROWS_BLOCK


def full_packs(packs: int, tpr: int, items: int) -> int:
    """FULL of a fused launch of `tpr` threads a row, `items` packs a thread, for rows of
    `packs`: how many of each thread's packs lie inside every row, where that is all of them or
    all but the last, else 0 (every pack checked). So a launch shape has at most three compiled
    forms; in the two that know N, the packs inside take no bounds check, -inf padding or
    branch (experiments/notes/kernels-cuda.md)."""
    full = packs // tpr
    return full if full >= items - 1 else 0


def plan_fused(
    N: int, dtype: str, vec: int, cfg, device: Device | None = None, M: int | None = None
) -> RowPlan:
    """v3 for rows of N; M (None: the plan for every row count) only for the few-rows shape."""
    packs = N // vec
    for tpr, items in fused_ladder(vec, fused_packs(dtype, vec, cfg)):
        if tpr * items >= packs:
            tpr, items, block = few_rows_shape(
                M, N, dtype, vec, tpr, items, fused_items_max(vec), device, cfg.few_rows_per_sm
            )
            full = full_packs(packs, tpr, items) if vec > 1 else 0
            spec = fused_spec(dtype, tpr, items, vec, block, full)
            rpb = dict(spec.constants)["RPB"]
            return RowPlan(spec, block=tpr * rpb, rows_per_step=rpb)
    raise ValueError(
        f"softmax v3 holds rows of at most {fused_capacity(vec)} elements in registers "
        f"({'16-byte' if vec > 1 else 'element-wide'} accesses); N={N} (use v4 or auto)"
    )


def few_rows_specs(dtype: str, vec: int, items_max: int, spec_of) -> list[Spec]:
    """Every launch `few_rows_shape` can lead to: a warp to 256 threads a row, 1 to items_max
    packs, all of them inside the row or all but the last."""
    return [
        spec_of(dtype, tpr, items, vec, FEW_ROWS_BLOCK, full)
        for tpr in (32, 64, 128, 256)
        for items in range(1, items_max + 1)
        for full in (items - 1, items)
    ]
