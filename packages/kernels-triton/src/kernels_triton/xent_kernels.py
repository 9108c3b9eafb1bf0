"""Triton kernels of log_softmax, cross-entropy and the per-token log-probability / entropy.

Every kernel sees its tensors as (M, N) matrices with unit column stride and any row stride:
one row is one distribution over N classes. A program takes one row at a time (the one-pass
cross-entropy forward: ROWS rows, a [ROWS, BLOCK] tile) in a persistent grid (row = pid,
pid + programs, ...), so that the rows in flight, and so the bytes the second pass over a
row hopes to find in L2, are bounded (xent_launch.programs()).

A row is covered in one of two ways, by one constexpr, ONE_PASS (xent_launch.choose() decides it):

  ONE_PASS   the row is loaded into registers once, reduced, and the epilogue (log-softmax,
             loss and gradient) is computed from those registers: N read, N written.
  looped     pass 1 walks the row in BLOCK-wide tiles keeping the row's running max (one
             max across the program a tile) and, lane by lane, the sum of exp(x - max),
             rescaled when the max grows (the online softmax), and where asked the running
             sums the loss and the entropy need. Pass 2, where there is an output of the
             row's length, walks the row again back to front: its first tiles are those pass
             1 read last, the likeliest to still be in L2 (pass 1 reads with L2 priority
             evict_last, pass 2 reads and writes with evict_first). A row that is not whole
             16-byte packs from a 16-byte boundary (VEC > 0: GPT-2's 50257) is split into a
             head, a body of whole packs that the tiles move as 16-byte vectors, and a tail,
             by the row's offset from a boundary (xent_rows.split, xent_launch.splits()); the
             recomputing backward kernels split their rows the same way.

One exponential an element a pass: a tile max costs a reduction across the program, but a
running max kept lane by lane costs a second exponential an element (the rescale), and at an
H200's bandwidth the exponentials of two passes would be near the special-function units'
throughput.

Invariants:
- A row's arithmetic depends only on (N, dtype, BLOCK, ROWS), which come from (N, dtype)
  alone (xent_launch.choose(), cross_entropy.ce_shape), never from M, and is the same in each of a
  tile's ROWS slots; looped, also on the row's offset from a 16-byte boundary (its split; the
  first tensor's, x or y: never the other tensors' layouts). A row gives the same bits alone
  or in any batch that puts it at the same offset mod 16 bytes: contiguous rows of whole
  packs always; a contiguous row of an odd N alone at the offset it had in the batch (the
  body's hint is on its address, body_ptr: a base off a boundary gets the batch's register
  layout, and so its order of summation).
  An element's gradient is a function of the row's statistics alone, however it is split.
- The accumulators are fp32 (fp64 for fp64 storage). Sums that feed a difference with the
  max are kept relative to the lane's running max (the sum of x - max, the sum of
  exp(x - max) * (x - max)) and shifted when the max grows, so a row of logits near 1e4
  loses no digits to the cancellation lse - x.
- -inf entries weigh nothing; a row with NaN or +inf gives NaN, and a row of only -inf gives
  NaN, as in torch. A reference point of 0 stands in for the max while a lane has seen only
  -inf (exp(-inf - -inf) would be NaN).
"""

from __future__ import annotations

import triton
import triton.language as tl

from kernels_triton.xent_reduce import grad_scale, zero_ticket
from kernels_triton.xent_rows import (
    acc_const,
    body_col,
    body_ptr,
    exp,
    exp_ref,
    lanes_in_row,
    row_start,
    row_stats,
    split,
    tile_stats,
    to_acc,
)

# --- log_softmax ------------------------------------------------------------------------


@triton.jit
def log_softmax_fwd(
    X, Y, M, N, stride_x, stride_y, OFF,
    BLOCK: tl.constexpr, ALIGN: tl.constexpr, VEC: tl.constexpr, LIKE: tl.constexpr,
    ONE_PASS: tl.constexpr, IS_FP64: tl.constexpr,
):  # fmt: skip
    """y = (x - max) - log(sum exp(x - max)) along each row."""
    cols = tl.arange(0, BLOCK)
    PACK: tl.constexpr = VEC if VEC > 0 else ALIGN
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        x_row = row_start(X, row, stride_x, ALIGN)
        y_row = row_start(Y, row, stride_y, ALIGN)
        if ONE_PASS:
            valid = lanes_in_row(cols, N, ALIGN)
            x = to_acc(tl.load(x_row + cols, mask=valid, other=float("-inf")), IS_FP64)
            big, _, total, _, _ = tile_stats(x, valid, False, False)
            y = (x - big) - tl.log(total)
            tl.store(y_row + cols, y.to(Y.dtype.element_ty), mask=valid)
        else:
            head, body, edges, in_edges = split(OFF + tl.cast(row, tl.int64) * stride_x, N, VEC)
            x_body = body_ptr(X, row, stride_x, head, ALIGN, VEC, True)
            y_body = body_ptr(Y, row, stride_y, head, ALIGN, VEC, LIKE)
            big, total, _, _ = row_stats(x_row, x_body, body, edges, in_edges, N, BLOCK, PACK, VEC, IS_FP64,
                                         False, False)  # fmt: skip
            log_total = tl.log(total)
            for i in range(0, tl.cdiv(body, BLOCK)):
                c = (tl.cdiv(body, BLOCK) - 1 - i) * BLOCK + cols  # back to front: L2's freshest first
                valid = lanes_in_row(c, body, PACK)
                x = to_acc(tl.load(x_body + c, mask=valid, other=0.0, eviction_policy="evict_first"), IS_FP64)
                y = (x - big) - log_total
                tl.store(y_body + c, y.to(Y.dtype.element_ty), mask=valid, eviction_policy="evict_first")
            if VEC > 0:
                x = to_acc(tl.load(x_row + edges, mask=in_edges, other=0.0), IS_FP64)
                tl.store(y_row + edges, ((x - big) - log_total).to(Y.dtype.element_ty), mask=in_edges)


@triton.jit
def log_softmax_bwd(
    Y, DY, DX, M, N, stride_y, stride_dy, stride_dx, OFF,
    BLOCK: tl.constexpr, ALIGN: tl.constexpr, VEC: tl.constexpr, LIKE: tl.constexpr,
    ONE_PASS: tl.constexpr, IS_FP64: tl.constexpr,
):  # fmt: skip
    """dx = dy - exp(y) * sum(dy) along each row."""
    cols = tl.arange(0, BLOCK)
    PACK: tl.constexpr = VEC if VEC > 0 else ALIGN
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        y_row = row_start(Y, row, stride_y, ALIGN)
        dy_row = row_start(DY, row, stride_dy, ALIGN)
        dx_row = row_start(DX, row, stride_dx, ALIGN)
        if ONE_PASS:
            valid = lanes_in_row(cols, N, ALIGN)
            dy = to_acc(tl.load(dy_row + cols, mask=valid, other=0.0), IS_FP64)
            y = to_acc(tl.load(y_row + cols, mask=valid, other=float("-inf")), IS_FP64)
            dx = dy - exp(y) * tl.sum(dy, 0)
            tl.store(dx_row + cols, dx.to(DX.dtype.element_ty), mask=valid)
        else:  # the split follows y's rows
            head, body, edges, in_edges = split(OFF + tl.cast(row, tl.int64) * stride_y, N, VEC)
            y_body = body_ptr(Y, row, stride_y, head, ALIGN, VEC, True)
            dy_body = body_ptr(DY, row, stride_dy, head, ALIGN, VEC, LIKE)
            dx_body = body_ptr(DX, row, stride_dx, head, ALIGN, VEC, LIKE)
            acc = to_acc(tl.zeros([BLOCK], tl.float32), IS_FP64)
            if VEC > 0:  # head and tail in lane 0
                dy_edges = to_acc(tl.load(dy_row + edges, mask=in_edges, other=0.0), IS_FP64)
                acc = tl.where(cols == 0, tl.sum(dy_edges, 0), acc)
            for start in range(0, body, BLOCK):
                c = start + cols
                acc += to_acc(tl.load(dy_body + c, mask=lanes_in_row(c, body, PACK), other=0.0), IS_FP64)
            total = tl.sum(acc, 0)
            for i in range(0, tl.cdiv(body, BLOCK)):
                c = (tl.cdiv(body, BLOCK) - 1 - i) * BLOCK + cols
                valid = lanes_in_row(c, body, PACK)
                dy = to_acc(tl.load(dy_body + c, mask=valid, other=0.0), IS_FP64)
                y = to_acc(tl.load(y_body + c, mask=valid, other=float("-inf")), IS_FP64)
                tl.store(dx_body + c, (dy - exp(y) * total).to(DX.dtype.element_ty), mask=valid)
            if VEC > 0:
                dy = to_acc(tl.load(dy_row + edges, mask=in_edges, other=0.0), IS_FP64)
                y = to_acc(tl.load(y_row + edges, mask=in_edges, other=float("-inf")), IS_FP64)
                tl.store(dx_row + edges, (dy - exp(y) * total).to(DX.dtype.element_ty), mask=in_edges)


# --- cross-entropy ----------------------------------------------------------------------


@triton.jit
def ce_grad_off_target(e, inv_total, scale):
    """ce_grad without smoothing at a column other than the target: one multiply an element. The
    kernels that write every column so and then store the target's over it call it too."""
    return e * (inv_total * scale)


@triton.jit
def ce_grad(e, inv_total, c, t, smooth, N, scale, SMOOTH: tl.constexpr):
    """(p - (1 - eps) onehot(t) - eps / N) * scale at the columns c of a row, p = e * inv_total the
    softmax."""
    if SMOOTH == 0.0:
        return tl.where(c == t, (e * inv_total - 1.0) * scale, ce_grad_off_target(e, inv_total, scale))
    return (e * inv_total - tl.where(c == t, 1.0 - smooth, 0.0) - smooth / N) * scale


@triton.jit
def _ce_loss(log_total, big, x_t, sum_x, counted, smooth, N, SMOOTH: tl.constexpr):
    """A row's loss from its statistics (scalars or [ROWS] vectors); 0 where not counted."""
    loss = log_total + (big - x_t)
    if SMOOTH != 0.0:
        loss = log_total + (1.0 - smooth) * (big - x_t) - smooth * (sum_x / N)
    return tl.where(counted, loss, 0.0)


@triton.jit
def cross_entropy_fwd(
    X, T, LOSS, STATS, G, COUNT, M, N, stride_x, stride_g, OFF, ignore_index,
    BLOCK: tl.constexpr, ALIGN: tl.constexpr, VEC: tl.constexpr, LIKE: tl.constexpr, ONE_PASS: tl.constexpr,
    IS_FP64: tl.constexpr, SMOOTH: tl.constexpr, WRITE_GRAD: tl.constexpr, MEAN: tl.constexpr, ROWS: tl.constexpr,
    ZERO_TICKET: tl.constexpr,  # the sum: zero reduce_loss's ticket (xent_reduce.zero_ticket)
):  # fmt: skip
    """Per row: loss = log S + (1 - eps)(max - x[t]) - eps * sum(x - max) / N, where
    S = sum exp(x - max); 0 where t == ignore_index, NaN where t is out of range. STATS
    (2, M) keeps (max, S) for a later backward. WRITE_GRAD: also the gradient of the
    summed (MEAN: averaged over the count_total(COUNT) rows not ignored) loss, for an
    upstream gradient of 1, into G (which may be X itself: each tile is read before it is
    written).
    SMOOTH: the label smoothing eps, a constexpr so that fp64 rows get it unrounded.
    ONE_PASS: ROWS whole rows at a time, a [ROWS, BLOCK] tile (cross_entropy.ce_shape).
    Looped: the row split as X's rows sit (VEC, OFF; G's body hinted where LIKE)."""
    zero_ticket(COUNT, ZERO_TICKET)
    cols = tl.arange(0, BLOCK)
    PACK: tl.constexpr = VEC if VEC > 0 else ALIGN
    smooth = acc_const(SMOOTH, IS_FP64)
    scale_all = 1.0
    if WRITE_GRAD:
        scale_all = grad_scale(COUNT, MEAN, IS_FP64)
    if ONE_PASS:
        for blk in range(tl.program_id(0), tl.cdiv(M, ROWS), tl.num_programs(0)):
            rows = blk * ROWS + tl.arange(0, ROWS)
            live = rows < M
            x_rows = row_start(X, rows, stride_x, ALIGN)
            valid = live[:, None] & lanes_in_row(cols, N, ALIGN)[None, :]
            x = to_acc(tl.load(x_rows[:, None] + cols[None, :], mask=valid, other=float("-inf")), IS_FP64)
            # the targets after the tile: their load, and x[t]'s that waits on it, overlap the tile's
            t = tl.load(T + rows, mask=live, other=ignore_index).to(tl.int64)
            counted = t != ignore_index
            in_row = (t >= 0) & (t < N)
            x_t = to_acc(tl.load(x_rows + t, mask=live & counted & in_row, other=float("nan")), IS_FP64)
            big = tl.max(x, 1)
            r = exp_ref(big)[:, None]
            e = exp(x - r)
            total = tl.sum(e, 1)
            sum_x = 0.0
            if SMOOTH != 0.0:
                sum_x = tl.sum(tl.where(valid, x - r, 0.0), 1)
            loss = _ce_loss(tl.log(total), big, x_t, sum_x, counted, smooth, N, SMOOTH)
            tl.store(LOSS + rows, loss.to(LOSS.dtype.element_ty), mask=live)
            tl.store(STATS + rows, big.to(STATS.dtype.element_ty), mask=live)
            tl.store(STATS + M + rows, total.to(STATS.dtype.element_ty), mask=live)
            if WRITE_GRAD:
                scale = tl.where(counted, scale_all, 0.0)
                inv_total = 1.0 / total
                g_rows = row_start(G, rows, stride_g, ALIGN)
                if SMOOTH == 0.0:  # the targets' after
                    g = ce_grad_off_target(e, inv_total[:, None], scale[:, None])
                else:
                    g = ce_grad(
                        e, inv_total[:, None], cols[None, :], t[:, None], smooth, N, scale[:, None], SMOOTH
                    )
                tl.store(g_rows[:, None] + cols[None, :], g.to(G.dtype.element_ty), mask=valid)
                if SMOOTH == 0.0:  # the targets' (p - 1) * scale over what the tile wrote there
                    tl.debug_barrier()
                    g_t = ce_grad(exp(x_t - exp_ref(big)), inv_total, t, t, smooth, N, scale, SMOOTH)
                    tl.store(g_rows + t, g_t.to(G.dtype.element_ty), mask=live & counted & in_row)
    else:
        for row in range(tl.program_id(0), M, tl.num_programs(0)):
            x_row = row_start(X, row, stride_x, ALIGN)
            t = tl.load(T + row).to(tl.int64)
            counted = t != ignore_index
            x_t = to_acc(tl.load(x_row + t, mask=counted & (t >= 0) & (t < N), other=float("nan")), IS_FP64)
            head, body, edges, in_edges = split(OFF + tl.cast(row, tl.int64) * stride_x, N, VEC)
            x_body = body_ptr(X, row, stride_x, head, ALIGN, VEC, True)
            big, total, sum_x, _ = row_stats(x_row, x_body, body, edges, in_edges, N, BLOCK, PACK, VEC, IS_FP64,
                                             SMOOTH != 0.0, False)  # fmt: skip
            loss = _ce_loss(tl.log(total), big, x_t, sum_x, counted, smooth, N, SMOOTH)
            tl.store(LOSS + row, loss.to(LOSS.dtype.element_ty))
            tl.store(STATS + row, big.to(STATS.dtype.element_ty))
            tl.store(STATS + M + row, total.to(STATS.dtype.element_ty))
            if WRITE_GRAD:
                g_row = row_start(G, row, stride_g, ALIGN)
                g_body = body_ptr(G, row, stride_g, head, ALIGN, VEC, LIKE)
                scale = tl.where(counted, scale_all, 0.0)
                inv_total = 1.0 / total
                for i in range(0, tl.cdiv(body, BLOCK)):
                    c = (tl.cdiv(body, BLOCK) - 1 - i) * BLOCK + cols
                    valid = lanes_in_row(c, body, PACK)
                    x = tl.load(x_body + c, mask=valid, other=0.0, eviction_policy="evict_first")
                    x = to_acc(x, IS_FP64)
                    g = ce_grad(exp(x - big), inv_total, c, body_col(t, head, N), smooth, N, scale, SMOOTH)
                    tl.store(g_body + c, g.to(G.dtype.element_ty), mask=valid, eviction_policy="evict_first")
                if VEC > 0:  # the edges last: with G = X their logits are still there
                    x = to_acc(tl.load(x_row + edges, mask=in_edges, other=0.0), IS_FP64)
                    g = ce_grad(exp(x - big), inv_total, edges, t, smooth, N, scale, SMOOTH)
                    tl.store(g_row + edges, g.to(G.dtype.element_ty), mask=in_edges)


@triton.jit
def _ce_bwd_grad(x, c, t, big, inv_total, smooth, N, scale, d, G, DLOSS, PER_ROW: tl.constexpr,
                 SMOOTH: tl.constexpr):  # fmt: skip
    """cross_entropy_bwd's gradient of columns c, in G's dtype."""
    g = ce_grad(exp(x - big), inv_total, c, t, smooth, N, scale, SMOOTH).to(G.dtype.element_ty)
    if not PER_ROW:
        if d != 1.0:
            g = (g.to(DLOSS.dtype.element_ty) * d).to(G.dtype.element_ty)
    return g


@triton.jit
def cross_entropy_bwd(
    X, T, STATS, DLOSS, G, COUNT, M, N, stride_x, stride_g, OFF, ignore_index,
    BLOCK: tl.constexpr, ALIGN: tl.constexpr, VEC: tl.constexpr, LIKE: tl.constexpr, IS_FP64: tl.constexpr,
    MEAN: tl.constexpr, SMOOTH: tl.constexpr, PER_ROW: tl.constexpr,
):  # fmt: skip
    """The gradient from the saved (max, S), one read of the logits and one write.
    PER_ROW (reduction "none"): the row's gradient times DLOSS[row]. Otherwise DLOSS[0]
    scales the gradient of the summed (MEAN: averaged) loss with the very operations, in the
    same order and roundings, that cross_entropy_fwd's WRITE_GRAD and scale_unless_one apply:
    a second backward gives the first one's bits (an element's gradient is a function of
    the row's statistics alone, however the row is split)."""
    cols = tl.arange(0, BLOCK)
    PACK: tl.constexpr = VEC if VEC > 0 else ALIGN
    smooth = acc_const(SMOOTH, IS_FP64)
    scale_all = grad_scale(COUNT, MEAN, IS_FP64)
    d = tl.load(DLOSS)
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        x_row = row_start(X, row, stride_x, ALIGN)
        g_row = row_start(G, row, stride_g, ALIGN)
        head, body, edges, in_edges = split(OFF + tl.cast(row, tl.int64) * stride_x, N, VEC)
        x_body = body_ptr(X, row, stride_x, head, ALIGN, VEC, True)
        g_body = body_ptr(G, row, stride_g, head, ALIGN, VEC, LIKE)
        t = tl.load(T + row).to(tl.int64)
        if PER_ROW:
            scale = to_acc(tl.load(DLOSS + row), IS_FP64)
        else:
            scale = scale_all
        scale = tl.where(t != ignore_index, scale, 0.0)
        big = tl.load(STATS + row)
        inv_total = 1.0 / tl.load(STATS + M + row)
        t_body = body_col(t, head, N)
        for start in range(0, body, BLOCK):
            c = start + cols
            valid = lanes_in_row(c, body, PACK)
            x = to_acc(tl.load(x_body + c, mask=valid, other=0.0), IS_FP64)
            g = _ce_bwd_grad(x, c, t_body, big, inv_total, smooth, N, scale, d, G, DLOSS, PER_ROW, SMOOTH)
            tl.store(g_body + c, g, mask=valid)
        if VEC > 0:
            x = to_acc(tl.load(x_row + edges, mask=in_edges, other=0.0), IS_FP64)
            g = _ce_bwd_grad(x, edges, t, big, inv_total, smooth, N, scale, d, G, DLOSS, PER_ROW, SMOOTH)
            tl.store(g_row + edges, g, mask=in_edges)


@triton.jit
def scale_unless_one(G, DOUT, numel, BLOCK: tl.constexpr, ALIGN: tl.constexpr, IS_FP64: tl.constexpr):
    """G *= DOUT[0] in fp32 (fp64 for fp64 G), skipped (no read, no write) when DOUT[0] == 1, the
    usual loss.backward(). The test is on the device, so the host never waits for it; DOUT is
    read in its own dtype (the loss's), so no conversion is launched before."""
    d = to_acc(tl.load(DOUT), IS_FP64)
    if d != 1.0:
        offs = tl.arange(0, BLOCK).to(tl.int64)
        for start in range(tl.program_id(0).to(tl.int64) * BLOCK, numel, tl.num_programs(0) * BLOCK):
            mask = lanes_in_row(start + offs, numel, ALIGN)
            g = to_acc(tl.load(G + start + offs, mask=mask, other=0.0), IS_FP64)
            tl.store(G + start + offs, (g * d).to(G.dtype.element_ty), mask=mask)
