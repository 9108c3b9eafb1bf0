"""The tile kernels of the row softmax, y = softmax(x), and its backward, dx = y * (dy - sum(y * dy)) from
the saved y, for every row the cluster form (cluster.py) does not take: (M, N) tensors with unit column
stride, any row stride, fp32 / fp16 / bf16 in and out, all arithmetic in fp32. BLOCK, the elements a
program holds (configs.py; launch.tile_meta derives the other constexprs):

  BLOCK >= N  one pass: the row (or BLOCK // next_pow2(N) short rows, a [ROWS, BLOCK_N] tile) is read into
              registers once: the least traffic there is. A warp a row (PACKS > 0): packs of 32 lanes x 16
              bytes, a row's max and sum warp shuffles alone (a [BLOCK_N] tile crosses warps in shared memory).
  BLOCK <  N  looped: a persistent grid (launch.py) walks each row twice: pass 1 keeps each lane's running
              max and sum of exponentials (the online softmax) and merges the lanes'; pass 2 writes, back to
              front (the tiles pass 1 read last are the likeliest in L2; L2_HINTS asks L2 to keep them).

Accuracy: every exponential is exp2((x - max) * log2 e), the max subtracted first (x = 3e38 gives 0, not
inf - inf); the normalisation multiplies by 1 / sum, an IEEE division once a row. The looped lanes' sums are
compensated (Kahan) and merged in fp64: the error does not grow with the number of tiles. Non-finite inputs
give torch's answers (NaN or +inf: a NaN row; -inf weighs nothing; a row of -inf: NaN). Every constexpr is
passed explicitly: some Triton versions do not make a defaulted helper parameter a constexpr."""

from __future__ import annotations

import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)  # exp(x) = exp2(x * log2(e)); exp2 is the hardware instruction


@triton.jit
def _row_start(ptr, row, row_stride, ALIGN: tl.constexpr):
    """Pointer to row `row` (int64: M * stride may pass 2**31), hinted a multiple of ALIGN
    elements: 16-byte loads and stores where N is, say, 600 (not a multiple of 16)."""
    return ptr + tl.multiple_of(row * row_stride, ALIGN)


@triton.jit
def _in_row(cols, N, ALIGN: tl.constexpr):
    """cols < N, constant over runs of ALIGN lanes to the compiler: masked accesses stay vectors."""
    return cols // ALIGN < N // ALIGN


@triton.jit
def _load_f32(ptrs, mask, other, NEEDS_MASK: tl.constexpr, POLICY: tl.constexpr):
    """tl.load in fp32, masked only where a row or the last tile is ragged. POLICY: L2 eviction."""
    if NEEDS_MASK:
        x = tl.load(ptrs, mask=mask, other=other, eviction_policy=POLICY)
    else:
        x = tl.load(ptrs, eviction_policy=POLICY)
    return x.to(tl.float32)


@triton.jit
def _store(ptrs, value, mask, NEEDS_MASK: tl.constexpr, POLICY: tl.constexpr):
    if NEEDS_MASK:
        tl.store(ptrs, value.to(ptrs.dtype.element_ty), mask=mask, eviction_policy=POLICY)
    else:
        tl.store(ptrs, value.to(ptrs.dtype.element_ty), eviction_policy=POLICY)


@triton.jit
def _online_max_sum(m, d, c, x):
    """One online-softmax step, lane by lane: m the running max, d the running sum of exp(x - m), compensated
    (Kahan: c holds what d's roundings lost); reference 0 while a lane saw only -inf (d stays 0, not NaN)."""
    m_new = tl.maximum(m, x)
    ref = tl.where(m_new == float("-inf"), 0.0, m_new)
    scale = tl.exp2((m - ref) * LOG2E)
    d, c = d * scale, c * scale
    term = tl.exp2((x - ref) * LOG2E) - c
    total = d + term
    c = (total - d) - term  # the rounding error of d + term (exact in fp32 when |d| >= |term|)
    return m_new, total, c


@triton.jit
def _pack_load(rows_ptr, p: tl.constexpr, N, live, other,
               WIDTH: tl.constexpr, FULL: tl.constexpr, ROW_MASK: tl.constexpr, ALIGN: tl.constexpr):  # fmt: skip
    """Pack p of each row, a [ROWS, WIDTH] fp32 tile: those before FULL lie inside every row."""
    cols = p * WIDTH + tl.arange(0, WIDTH)[None, :]
    if p < FULL:
        return _load_f32(rows_ptr + cols, live, other, ROW_MASK, "")
    return _load_f32(rows_ptr + cols, live & _in_row(cols, N, ALIGN), other, True, "")


@triton.jit
def _pack_store(rows_ptr, p: tl.constexpr, value, N, live,
                WIDTH: tl.constexpr, FULL: tl.constexpr, ROW_MASK: tl.constexpr, ALIGN: tl.constexpr):  # fmt: skip
    cols = p * WIDTH + tl.arange(0, WIDTH)[None, :]
    if p < FULL:
        _store(rows_ptr + cols, value, live, ROW_MASK, "")
    else:
        _store(rows_ptr + cols, value, live & _in_row(cols, N, ALIGN), True, "")


@triton.jit
def _warp_rows_fwd(x_ptr, y_ptr, x_row_stride, y_row_stride, M, N,
                   WIDTH: tl.constexpr, ROWS: tl.constexpr, PACKS: tl.constexpr, FULL: tl.constexpr,
                   ROW_MASK: tl.constexpr, ALIGN: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    live = (rows < M)[:, None]
    x_rows = _row_start(x_ptr, rows.to(tl.int64), x_row_stride, ALIGN)[:, None]
    xs = ()
    past = tl.where(live, float("-inf"), 0.0)  # rows past M read 0: no -inf - -inf in lanes never stored
    for p in tl.static_range(PACKS):  # -inf past the row: no weight
        xs = xs + (_pack_load(x_rows, p, N, live, past, WIDTH, FULL, ROW_MASK, ALIGN),)
    m = xs[0]  # max and sum start from the first pack: no -inf or 0 folded into its elements
    for p in tl.static_range(1, PACKS):
        m = tl.maximum(m, xs[p])
    m_row = tl.max(m, axis=1)[:, None]  # [ROWS, 1]
    es = (tl.exp2((xs[0] - m_row) * LOG2E),)
    total = es[0]
    for p in tl.static_range(1, PACKS):
        es = es + (tl.exp2((xs[p] - m_row) * LOG2E),)
        total += es[p]
    inv_sum = tl.math.div_rn(1.0, tl.sum(total, axis=1))[:, None]
    y_rows = _row_start(y_ptr, rows.to(tl.int64), y_row_stride, ALIGN)[:, None]
    for p in tl.static_range(PACKS):
        _pack_store(y_rows, p, es[p] * inv_sum, N, live, WIDTH, FULL, ROW_MASK, ALIGN)


@triton.jit
def _warp_rows_bwd(y_ptr, dy_ptr, dx_ptr, y_row_stride, dy_row_stride, dx_row_stride, M, N,
                   WIDTH: tl.constexpr, ROWS: tl.constexpr, PACKS: tl.constexpr, FULL: tl.constexpr,
                   ROW_MASK: tl.constexpr, ALIGN: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    live = (rows < M)[:, None]
    r = rows.to(tl.int64)
    y_rows = _row_start(y_ptr, r, y_row_stride, ALIGN)[:, None]
    dy_rows = _row_start(dy_ptr, r, dy_row_stride, ALIGN)[:, None]
    ys, dys = (), ()
    for p in tl.static_range(PACKS):
        ys = ys + (_pack_load(y_rows, p, N, live, 0.0, WIDTH, FULL, ROW_MASK, ALIGN),)
        dys = dys + (_pack_load(dy_rows, p, N, live, 0.0, WIDTH, FULL, ROW_MASK, ALIGN),)
    acc = ys[0] * dys[0]
    for p in tl.static_range(1, PACKS):
        acc += ys[p] * dys[p]
    dot = tl.sum(acc, axis=1)[:, None]
    dx_rows = _row_start(dx_ptr, r, dx_row_stride, ALIGN)[:, None]
    for p in tl.static_range(PACKS):
        _pack_store(dx_rows, p, ys[p] * (dys[p] - dot), N, live, WIDTH, FULL, ROW_MASK, ALIGN)


@triton.jit(do_not_specialize=["M"])
def softmax_fwd_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, M, N,
                       BLOCK: tl.constexpr, BLOCK_N: tl.constexpr, ROWS: tl.constexpr, ONE_PASS: tl.constexpr,
                       NEEDS_MASK: tl.constexpr, ALIGN: tl.constexpr, L2_HINTS: tl.constexpr,
                       PACKS: tl.constexpr, FULL: tl.constexpr):  # fmt: skip
    if PACKS > 0:  # a warp a row, BLOCK_N = the packs' width
        _warp_rows_fwd(
            x_ptr, y_ptr, x_row_stride, y_row_stride, M, N, BLOCK_N, ROWS, PACKS, FULL, NEEDS_MASK, ALIGN
        )
    elif ONE_PASS:
        rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
        cols = tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < M) & _in_row(cols, N, ALIGN)[None, :]
        x_ptrs = _row_start(x_ptr, rows.to(tl.int64), x_row_stride, ALIGN)[:, None] + cols[None, :]
        past = tl.where(rows[:, None] < M, float("-inf"), 0.0)  # rows past M: finite, never stored
        x = _load_f32(x_ptrs, mask, past, NEEDS_MASK, "")  # -inf: no weight
        m = tl.max(x, axis=1)  # [ROWS]
        e = tl.exp2((x - m[:, None]) * LOG2E)
        y = e * tl.math.div_rn(1.0, tl.sum(e, axis=1))[:, None]  # IEEE division: `/` may be approximate
        y_ptrs = _row_start(y_ptr, rows.to(tl.int64), y_row_stride, ALIGN)[:, None] + cols[None, :]
        _store(y_ptrs, y, mask, NEEDS_MASK, "")
    else:
        KEEP: tl.constexpr = "evict_last" if L2_HINTS else ""  # pass 1: read again soon
        DROP: tl.constexpr = "evict_first" if L2_HINTS else ""  # pass 2: last use / written once
        cols = tl.arange(0, BLOCK)
        n_full = N // BLOCK  # full tiles, unmasked; a ragged tail tile follows when NEEDS_MASK
        tail = n_full * BLOCK + cols
        for row in tl.range(tl.program_id(0).to(tl.int64), M, tl.num_programs(0)):
            x_row = _row_start(x_ptr, row, x_row_stride, ALIGN)
            y_row = _row_start(y_ptr, row, y_row_stride, ALIGN)
            # pass 1: each lane's running max and sum of exponentials
            m = tl.full([BLOCK], float("-inf"), tl.float32)
            d, c = tl.zeros([BLOCK], tl.float32), tl.zeros([BLOCK], tl.float32)  # c: d's compensation (Kahan)
            for t in range(n_full):
                x = _load_f32(x_row + t * BLOCK + cols, None, None, False, KEEP)
                m, d, c = _online_max_sum(m, d, c, x)
            if NEEDS_MASK:
                x = _load_f32(x_row + tail, _in_row(tail, N, ALIGN), float("-inf"), True, KEEP)
                m, d, c = _online_max_sum(m, d, c, x)
            # merge the lanes' sums rescaled to the row's max (a lane that saw only -inf adds 0; a row of -inf:
            # the scale is NaN, so is the row, as in torch), in fp64: BLOCK sums of very different sizes.
            m_row = tl.max(m, axis=0)
            row_sum = tl.sum(((d - c) * tl.exp2((m - m_row) * LOG2E)).to(tl.float64), axis=0)
            inv_sum = (1.0 / row_sum).to(tl.float32)
            # pass 2, back to front
            if NEEDS_MASK:
                x = _load_f32(x_row + tail, _in_row(tail, N, ALIGN), 0.0, True, DROP)
                y = tl.exp2((x - m_row) * LOG2E) * inv_sum
                _store(y_row + tail, y, _in_row(tail, N, ALIGN), True, DROP)
            for i in range(n_full):
                offs = (n_full - 1 - i) * BLOCK + cols
                x = _load_f32(x_row + offs, None, None, False, DROP)
                _store(y_row + offs, tl.exp2((x - m_row) * LOG2E) * inv_sum, None, False, DROP)


@triton.jit(do_not_specialize=["M"])
def softmax_bwd_kernel(y_ptr, dy_ptr, dx_ptr, y_row_stride, dy_row_stride, dx_row_stride, M, N,
                       BLOCK: tl.constexpr, BLOCK_N: tl.constexpr, ROWS: tl.constexpr, ONE_PASS: tl.constexpr,
                       NEEDS_MASK: tl.constexpr, ALIGN: tl.constexpr, L2_HINTS: tl.constexpr,
                       PACKS: tl.constexpr, FULL: tl.constexpr):  # fmt: skip
    if PACKS > 0:  # a warp a row, BLOCK_N = the packs' width
        _warp_rows_bwd(y_ptr, dy_ptr, dx_ptr, y_row_stride, dy_row_stride, dx_row_stride, M, N,
                       BLOCK_N, ROWS, PACKS, FULL, NEEDS_MASK, ALIGN)  # fmt: skip
    elif ONE_PASS:
        rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
        cols = tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < M) & _in_row(cols, N, ALIGN)[None, :]
        r = rows.to(tl.int64)
        y_ptrs = _row_start(y_ptr, r, y_row_stride, ALIGN)[:, None] + cols[None, :]
        dy_ptrs = _row_start(dy_ptr, r, dy_row_stride, ALIGN)[:, None] + cols[None, :]
        y = _load_f32(y_ptrs, mask, 0.0, NEEDS_MASK, "")
        dy = _load_f32(dy_ptrs, mask, 0.0, NEEDS_MASK, "")
        dot = tl.sum(y * dy, axis=1)  # [ROWS]
        dx_ptrs = _row_start(dx_ptr, r, dx_row_stride, ALIGN)[:, None] + cols[None, :]
        _store(dx_ptrs, y * (dy - dot[:, None]), mask, NEEDS_MASK, "")
    else:
        KEEP: tl.constexpr = "evict_last" if L2_HINTS else ""  # as in the forward
        DROP: tl.constexpr = "evict_first" if L2_HINTS else ""
        cols = tl.arange(0, BLOCK)
        n_full = N // BLOCK
        tail = n_full * BLOCK + cols
        for row in tl.range(tl.program_id(0).to(tl.int64), M, tl.num_programs(0)):
            y_row = _row_start(y_ptr, row, y_row_stride, ALIGN)
            dy_row = _row_start(dy_ptr, row, dy_row_stride, ALIGN)
            dx_row = _row_start(dx_ptr, row, dx_row_stride, ALIGN)
            acc = tl.zeros([BLOCK], tl.float32)
            for t in range(n_full):
                offs = t * BLOCK + cols
                y = _load_f32(y_row + offs, None, None, False, KEEP)
                acc += y * _load_f32(dy_row + offs, None, None, False, KEEP)
            if NEEDS_MASK:
                in_row = _in_row(tail, N, ALIGN)
                y = _load_f32(y_row + tail, in_row, 0.0, True, KEEP)
                acc += y * _load_f32(dy_row + tail, in_row, 0.0, True, KEEP)
            dot = tl.sum(acc, axis=0)
            # pass 2, back to front
            if NEEDS_MASK:
                in_row = _in_row(tail, N, ALIGN)
                y = _load_f32(y_row + tail, in_row, 0.0, True, DROP)
                dx = y * (_load_f32(dy_row + tail, in_row, 0.0, True, DROP) - dot)
                _store(dx_row + tail, dx, in_row, True, DROP)
            for i in range(n_full):
                offs = (n_full - 1 - i) * BLOCK + cols
                y = _load_f32(y_row + offs, None, None, False, DROP)
                dx = y * (_load_f32(dy_row + offs, None, None, False, DROP) - dot)
                _store(dx_row + offs, dx, None, False, DROP)


# name (as autotune_picks.json names it) -> kernel; the tensors each reads
KERNELS = {"softmax_fwd": softmax_fwd_kernel, "softmax_bwd": softmax_bwd_kernel}
STREAMS = {"softmax_fwd": 1, "softmax_bwd": 2}
