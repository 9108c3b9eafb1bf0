"""The cross-entropy forward a warp a row: the softmax's warp-rows form (kernels.py) with the
loss, the row's statistics and the gradient as its epilogue, for short rows of whole 16-byte packs.

What it buys: the one-pass tile of cross_entropy_fwd is a power of two wide, and every lane of it
computes, in the row or not: a row of 600 takes a 1024-wide tile, 41% of its lanes idle. Here a
row is PACKS packs of 32 lanes x 16 bytes (WIDTH elements), the last one partly past the row
(FULL of them lie inside it): 600 bf16 elements take 768 lanes, 600 fp32 640. A warp holds a
row, so its max and sum are warp shuffles alone; ROWS rows a program, a warp each.

The arithmetic is cross_entropy_fwd's one pass (the same exponentials, loss and gradient
formulas; the gradient is cross_entropy_bwd's recompute from the saved (max, S), bit for bit)
with its own order of summation, which depends on (N, dtype) alone: a row's bits are the same in
any batch. cross_entropy.py takes it where `shape` gives one.
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl

from kernels_triton.configs import warp_row_packs, warp_rows_fit
from kernels_triton.xent_kernels import ce_grad, ce_grad_off_target
from kernels_triton.xent_reduce import grad_scale, zero_ticket
from kernels_triton.xent_rows import acc_const, exp, exp_ref, lanes_in_row, row_start

ROWS = 2  # rows (warps) a program


@functools.cache  # on the call path
def shape(n: int, itemsize: int) -> tuple[int, int, int, int] | None:
    """(WIDTH, PACKS, FULL, ROWS) for rows of n elements of `itemsize` bytes, or None where the
    form does not apply (fp64; a row shorter than a pack, longer than 8 packs, or not whole
    16-byte packs: configs.warp_rows_fit)."""
    if itemsize == 8 or not warp_rows_fit(n, itemsize):
        return None
    return (*warp_row_packs(n, itemsize), ROWS)


@triton.jit
def _pack_cols(p: tl.constexpr, N, live, WIDTH: tl.constexpr, FULL: tl.constexpr, ALIGN: tl.constexpr):
    """Pack p's columns [1, WIDTH] and its mask: the rows' (live, [ROWS, 1]) for the packs before
    FULL, which lie inside every row; the last one's also masks the lanes past the row."""
    cols = p * WIDTH + tl.arange(0, WIDTH)[None, :]
    if p < FULL:
        return cols, live
    else:
        return cols, live & lanes_in_row(cols, N, ALIGN)


@triton.jit
def cross_entropy_warp_rows(
    X, T, LOSS, STATS, G, COUNT, M, N, stride_x, stride_g, ignore_index,
    WIDTH: tl.constexpr, PACKS: tl.constexpr, FULL: tl.constexpr, ROWS: tl.constexpr, ALIGN: tl.constexpr,
    SMOOTH: tl.constexpr, WRITE_GRAD: tl.constexpr, MEAN: tl.constexpr, ZERO_TICKET: tl.constexpr,
):  # fmt: skip
    """xent_kernels.cross_entropy_fwd's one pass (its arguments but OFF; fp32 accumulators),
    a warp a row."""
    zero_ticket(COUNT, ZERO_TICKET)
    smooth = acc_const(SMOOTH, False)
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    live = rows < M
    x_rows = row_start(X, rows, stride_x, ALIGN)
    # rows past M read 0, not -inf: no -inf - -inf in lanes never stored
    past = tl.where(live, float("-inf"), 0.0)[:, None]
    xs = ()
    for p in tl.static_range(PACKS):  # -inf past the row: no weight
        cols, mask = _pack_cols(p, N, live[:, None], WIDTH, FULL, ALIGN)
        xs = xs + (tl.load(x_rows[:, None] + cols, mask=mask, other=past).to(tl.float32),)
    # the targets after the row: their load, and x[t]'s that waits on it, overlap the row's
    t = tl.load(T + rows, mask=live, other=ignore_index).to(tl.int64)
    counted = t != ignore_index
    in_row = (t >= 0) & (t < N)
    x_t = tl.load(x_rows + t, mask=live & counted & in_row, other=float("nan")).to(tl.float32)
    scale_all = 1.0  # the mean's count, loaded here so that its latency overlaps the row's
    if WRITE_GRAD:
        scale_all = grad_scale(COUNT, MEAN, False)
    m = xs[0]
    for p in tl.static_range(1, PACKS):
        m = tl.maximum(m, xs[p])
    big = tl.max(m, 1)
    r = exp_ref(big)[:, None]
    es = (exp(xs[0] - r),)
    total = es[0]
    for p in tl.static_range(1, PACKS):
        es = es + (exp(xs[p] - r),)
        total += es[p]
    total = tl.sum(total, 1)
    loss = tl.log(total) + (big - x_t)
    if SMOOTH != 0.0:
        sum_x = tl.zeros_like(xs[0])
        for p in tl.static_range(PACKS):
            cols, mask = _pack_cols(p, N, live[:, None], WIDTH, FULL, ALIGN)
            sum_x += tl.where(mask, xs[p] - r, 0.0)
        loss = tl.log(total) + (1.0 - smooth) * (big - x_t) - smooth * (tl.sum(sum_x, 1) / N)
    tl.store(LOSS + rows, tl.where(counted, loss, 0.0).to(LOSS.dtype.element_ty), mask=live)
    tl.store(STATS + rows, big.to(STATS.dtype.element_ty), mask=live)
    tl.store(STATS + M + rows, total.to(STATS.dtype.element_ty), mask=live)
    if WRITE_GRAD:
        scale = tl.where(counted, scale_all, 0.0)
        inv_total = 1.0 / total
        g_rows = row_start(G, rows, stride_g, ALIGN)
        for p in tl.static_range(PACKS):
            cols, mask = _pack_cols(p, N, live[:, None], WIDTH, FULL, ALIGN)
            if SMOOTH == 0.0:  # the targets' after
                g = ce_grad_off_target(es[p], inv_total[:, None], scale[:, None])
            else:
                g = ce_grad(es[p], inv_total[:, None], cols, t[:, None], smooth, N, scale[:, None], SMOOTH)
            tl.store(g_rows[:, None] + cols, g.to(G.dtype.element_ty), mask=mask)
        if SMOOTH == 0.0:  # the targets' (p - 1) * scale over what the packs wrote there
            tl.debug_barrier()
            g_t = ce_grad(exp(x_t - exp_ref(big)), inv_total, t, t, smooth, N, scale, SMOOTH)
            tl.store(g_rows + t, g_t.to(G.dtype.element_ty), mask=live & counted & in_row)
