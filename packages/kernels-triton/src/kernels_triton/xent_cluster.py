"""The cross-entropy forward over a thread-block cluster (sm_90): cluster.py's form for rows too
long for one program's registers, with the loss, the row's statistics and the gradient as its
epilogue. kernel_for sizes it from the softmax's blocks (cluster.block); cross_entropy.py launches
it (xent_launch.launch with cluster=C) where there is no label smoothing.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from kernels_triton.cluster import block, blocks, tiles
from kernels_triton.configs import next_pow2
from kernels_triton.dsmem import exchange, pair, partial, row_sum, shift, split_row, widen
from kernels_triton.kernels import LOG2E
from kernels_triton.xent_kernels import ce_grad
from kernels_triton.xent_reduce import grad_scale, zero_ticket
from kernels_triton.xent_rows import exp

# (warps, register cap) of fp32 blocks of 8192 (32768 to 131072 columns): 8 warps of 32 values a thread
# under 64 registers, four blocks an SM, twice the warps in flight of 4 uncapped warps. Blocks of 4096 and
# 16-bit blocks keep cluster.block's 4 uncapped warps: the cap cost them more than the warps bought.
FP32_8192 = (8, 64)
# (warps, register cap) by fp32 of one tile of 16384 over 16 blocks, past cluster.TWO_TILES' rows: x unspilled
# across the exchange, SMs shared so that one block's loads overlap another's exchange.
LONG = {True: (8, 128), False: (4, 128)}


@functools.cache  # on the call path, as cluster.kernel_for; the dict is shared, never changed
def kernel_for(n_cols: int, dtype: torch.dtype, vec: int = 0):
    """(cluster_xent_kernel, constexprs, warps, register cap) of a row of n_cols (cluster.applies'):
    the softmax forward's chunk and C blocks, or cluster.tiles' past 131072 columns."""
    fp32 = dtype == torch.float32
    chunk, warps, cap = block(n_cols, "fwd", dtype)
    c, chunk2 = blocks(n_cols, chunk), 0
    if (two := tiles(n_cols, dtype)) is not None:
        c, chunk, chunk2, warps, cap = two
    elif cap is not None:
        warps, cap = LONG[fp32]
    elif fp32 and chunk == 8192:
        warps, cap = FP32_8192
    constexprs = {"C": c, "SLOTS": next_pow2(c), "CHUNK": chunk, "NEEDS_MASK": n_cols != c * (chunk + chunk2),
                  "COMPENSATED": fp32, "VEC": vec, "CHUNK2": chunk2, "THREADS": 32 * warps}  # fmt: skip
    return cluster_xent_kernel, constexprs, warps, cap


@triton.jit(do_not_specialize=["slot_base"])
def cluster_xent_kernel(
    x_ptr, t_ptr, loss_ptr, stats_ptr, g_ptr, count_ptr, M, N, x_row_stride, g_row_stride, OFF, ignore_index,
    slot_base,
    C: tl.constexpr, SLOTS: tl.constexpr, CHUNK: tl.constexpr, NEEDS_MASK: tl.constexpr, COMPENSATED: tl.constexpr, VEC: tl.constexpr,
    CHUNK2: tl.constexpr,  # > 0: a second tile of the block's columns, past its first CHUNK (tiles)
    THREADS: tl.constexpr,
    ALIGN: tl.constexpr, LIKE: tl.constexpr,  # xent_launch.splits(): the split follows x's rows
    WRITE_GRAD: tl.constexpr,  # also the gradient of the summed (MEAN: averaged) loss for dloss = 1
    MEAN: tl.constexpr,
    ZERO_TICKET: tl.constexpr,  # the sum: zero reduce_loss's ticket (xent_reduce.zero_ticket)
):  # fmt: skip
    """xent_kernels.cross_entropy_fwd without label smoothing, a row over a cluster: the row is
    read once and the gradient written from registers. The block holding column t reads x[t]
    and writes the loss (block 0 where t is ignored or out of range); block 0 writes STATS
    (max, S). The gradient is computed with cross_entropy_bwd's very operations from the row's
    (M, S): the same bits as its recompute. G may be X: a block writes only its own chunk, after
    reading it. COMPENSATED (fp32) applies to the merge of the C partials only: a chunk's sum is
    a plain one, so that x alone is held across the exchange. A row off 16-byte boundaries (VEC
    > 0) splits by x's offset, OFF + row * stride, as the looped kernels' rows do (xent_rows),
    with the body's address hinted, so a row alone at its batch offset keeps its bits."""
    zero_ticket(count_ptr, ZERO_TICKET)
    pid = tl.program_id(0)
    row = (pid // C).to(tl.int64)
    rank = pid % C
    x_row = x_ptr + tl.multiple_of(row * x_row_stride, ALIGN)
    g_row = g_ptr + tl.multiple_of(row * g_row_stride, ALIGN)
    t = tl.load(t_ptr + row).to(tl.int64)
    counted = t != ignore_index
    t_col = tl.where((t >= 0) & (t < N), t, -1).to(tl.int32)  # -1: no column
    SPAN: tl.constexpr = CHUNK + CHUNK2  # the block's columns
    lanes = tl.arange(0, CHUNK)
    if VEC > 0:
        head, body, in_chunk, edge_cols, in_edges = split_row(
            row, x_row_stride, OFF, rank, N, C, SPAN, CHUNK, VEC
        )
        first = head.to(tl.int32) + rank * SPAN  # the column of lane 0
        x = tl.load(tl.multiple_of(x_row + first, 16) + lanes, mask=in_chunk, other=float("-inf"))
        x_edges = tl.load(x_row + edge_cols, mask=in_edges, other=float("-inf")).to(tl.float32)
        in_body = (t_col >= head) & (t_col < head + body)
        here = tl.where(in_body, (t_col - first >= 0) & (t_col - first < SPAN), rank == C - 1)
    else:
        first = rank * SPAN
        in_chunk = first + lanes < N
        if NEEDS_MASK:
            x = tl.load(x_row + first + lanes, mask=in_chunk, other=float("-inf"))
        else:
            x = tl.load(x_row + first + lanes)
        here = (t_col - first >= 0) & (t_col - first < SPAN)
    if CHUNK2 > 0:  # the block's columns past its first CHUNK (every tile a power of two wide)
        lanes2 = CHUNK + tl.arange(0, CHUNK2)
        if VEC > 0:
            in_chunk2 = rank * SPAN + lanes2 < body
            x2 = tl.load(tl.multiple_of(x_row + first, 16) + lanes2, mask=in_chunk2, other=float("-inf"))
        else:
            in_chunk2 = first + lanes2 < N
            x2 = tl.load(x_row + first + lanes2, mask=in_chunk2, other=float("-inf"))
    # the block that writes the loss, and x[t] (a scalar load: no reduction over the chunk)
    writer = tl.where(counted & (t_col >= 0), here, rank == 0)
    x_t = tl.load(x_row + t_col, mask=writer & counted & (t_col >= 0), other=0.0).to(tl.float32)
    # the mean's count, loaded while the row's loads are in flight, not after the exchange where every
    # row would wait for it; under a register cap it is one 8-byte word spilled, still the faster
    scale_all = 1.0
    if WRITE_GRAD:
        scale_all = grad_scale(count_ptr, MEAN, False)
    if COMPENSATED:  # fp32: the max, then the sum of exponentials, not held
        m = tl.max(x, axis=0)
        if CHUNK2 > 0:
            m = tl.maximum(m, tl.max(x2, axis=0))
        if VEC > 0:
            m = tl.maximum(m, tl.max(x_edges, axis=0))
        s = tl.sum(tl.exp2((x - shift(m)) * LOG2E), axis=0)
        if CHUNK2 > 0:
            s += tl.sum(tl.exp2((x2 - shift(m)) * LOG2E), axis=0)
        if VEC > 0:
            s += tl.sum(tl.exp2((x_edges - shift(m)) * LOG2E), axis=0)
    else:  # 16 bits: one reduction of pairs over each packed tile
        m, s = partial(x, THREADS)
        if CHUNK2 > 0:
            m2, s2 = partial(x2, THREADS)
            m, s = pair(m, s, m2, s2)
        if VEC > 0:
            m_edges = tl.max(x_edges, axis=0)
            m, s = pair(m, s, m_edges, tl.sum(tl.exp2((x_edges - shift(m_edges)) * LOG2E), axis=0))
    m_all, s_all = exchange(m, s, slot_base, rank, C, SLOTS)
    m_row = tl.max(m_all, axis=0)  # the row's (M, S), merged as cluster_fwd_kernel merges them
    s_row = row_sum(tl.where(m_all == float("-inf"), s_all, s_all * tl.exp2((shift(m_all) - m_row) * LOG2E)),
                    COMPENSATED)  # fmt: skip
    loss = tl.where(t_col >= 0, tl.log(s_row) + (m_row - x_t), float("nan"))
    tl.store(loss_ptr + row, tl.where(counted, loss, 0.0).to(loss_ptr.dtype.element_ty), mask=writer)
    tl.store(stats_ptr + row, m_row.to(stats_ptr.dtype.element_ty), mask=rank == 0)
    tl.store(stats_ptr + M + row, s_row.to(stats_ptr.dtype.element_ty), mask=rank == 0)
    if WRITE_GRAD:
        scale = tl.where(counted, scale_all, 0.0)
        inv_total = 1.0 / s_row
        # xent_kernels.ce_grad_off_target at every column, its operations in order (the recompute's
        # bits; written out, the factor once for the body and the edges); the target's (p - 1) * scale
        # is stored over it below
        factor = inv_total * scale
        g = exp(widen(x) - m_row) * factor
        g_first = g_row + first
        if VEC > 0:
            if LIKE:  # G's rows sit at x's offsets: its body starts on a boundary too
                g_first = tl.multiple_of(g_first, 16)
            tl.store(g_first + lanes, g.to(g_ptr.dtype.element_ty), mask=in_chunk)
            g_edges = exp(x_edges - m_row) * factor
            tl.store(g_row + edge_cols, g_edges.to(g_ptr.dtype.element_ty), mask=in_edges)
        elif NEEDS_MASK:
            tl.store(g_first + lanes, g.to(g_ptr.dtype.element_ty), mask=in_chunk)
        else:
            tl.store(g_first + lanes, g.to(g_ptr.dtype.element_ty))
        if CHUNK2 > 0:
            g2 = exp(widen(x2) - m_row) * factor
            tl.store(g_first + lanes2, g2.to(g_ptr.dtype.element_ty), mask=in_chunk2)
        tl.debug_barrier()  # the block's stores above come before the target's, in the same place
        g_t = ce_grad(exp(x_t - m_row), inv_total, t_col, t_col, 0.0, N, scale, 0.0)
        tl.store(g_row + t_col, g_t.to(g_ptr.dtype.element_ty), mask=writer & counted & (t_col >= 0))
