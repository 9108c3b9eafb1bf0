"""The cluster form (sm_90) of kernels.py's forward and backward, and of the softmax family's long rows: a row of
up to MAX_COLS columns over the C blocks (blocks()) of a thread-block cluster, where one program a row would
read it twice and leave SMs idle at few rows. The blocks, scheduled together, each read and write their chunk
once, push their partial (forward: the chunk's max m and sum of exp(x - m); backward: its sum of y * dy, or of
dy for log_softmax) into every block's shared memory (dsmem.exchange) and merge the C partials: no scratch
buffer, no polling. Which rows take it: applies(); a block holds one tile or two (tiles()). A device that
refuses clusters of 16 blocks: launched().

Triton compiles no row reduction with num_ctas > 1: the kernel is compiled for one block and launched with
num_ctas = C in its launch metadata, M * C blocks, block b rank b % C of row b // C. A row's split (chunks;
head, body and tail: dsmem.split_row) follows N, the dtype and the row's address mod 16: a row keeps its
bits in any batch that puts it at the same alignment."""

from __future__ import annotations

import functools
import warnings

import torch
import triton
import triton.language as tl

from kernels_triton import dsmem as D
from kernels_triton.configs import DTYPES, INTERPRET, ROW_SHAPES, next_pow2
from kernels_triton.kernels import LOG2E
from kernels_triton.xent_rows import exp

MAX_CLUSTER = 16
MIN_COLS, MAX_COLS, MIN_ODD_16BIT_COLS = 32768, 16384 * MAX_CLUSTER, ROW_SHAPES[2][0] + 1
PORTABLE_COLS = 8 * 8192  # the longest row of clusters of at most 8 blocks (the portable sizes)
REFUSED: set[int] = set()  # devices that refused clusters of more than 8 blocks (a MIG slice, small GPCs)


def launched(run, device_index: int, n_cols: int) -> bool:
    """run(), a cluster launch for rows of n_cols: True; False where the device refused a cluster of more than
    8 blocks (rows past PORTABLE_COLS): it joins REFUSED, with a warning, and the caller routes the rows again.
    Any other error raises."""
    try:
        run()
    except RuntimeError as exc:
        if n_cols <= PORTABLE_COLS or "cluster" not in str(exc).lower():
            raise
        REFUSED.add(device_index)
        warnings.warn(f"device {device_index} refused a cluster of more than 8 blocks ({exc}): rows past "
                      f"{PORTABLE_COLS} columns take the tiles", RuntimeWarning, stacklevel=3)  # fmt: skip
        return False
    return True


@functools.cache
def _capable(device_index: int) -> bool:
    """Clusters of up to 16 blocks: sm_90 (H100, H200)."""
    return torch.cuda.get_device_capability(device_index)[0] == 9


@functools.cache  # on the family's call path: kernel_for runs every launch
def block(n_cols: int, direction: str, dtype: torch.dtype) -> tuple[int, int, int | None]:
    """(chunk, warps, register cap) of a block: of the chunks of 8192 and 4096 whose C = ceil(N / chunk) blocks fit
    a cluster, the one with the fewest lanes past the row (they compute too; 8192 on a tie). Past 8192 * MAX_CLUSTER
    columns, caps that let blocks share an SM unspilled: fp32 forward 3 an SM, backward 64 values (y, dy); 16-bit 5."""
    if n_cols <= 8192 * MAX_CLUSTER:
        fits = [chunk for chunk in (8192, 4096) if -(-n_cols // chunk) <= MAX_CLUSTER]
        return min(fits, key=lambda chunk: blocks(n_cols, chunk) * chunk), 4, None
    if direction == "bwd":
        return (16384, 16, 128) if dtype == torch.float32 else (16384, 8, 128)
    return (16384, 8, 80) if dtype == torch.float32 else (16384, 4, 96)


def blocks(n_cols: int, chunk: int) -> int:
    """C, the blocks of a row's cluster: ceil(N / chunk), any count up to 8 (the portable sizes);
    past 8, 16 (the H200 refuses to launch clusters of 9 to 15 blocks of these kernels)."""
    c = -(-n_cols // chunk)
    return c if c <= 8 else MAX_CLUSTER


def applies(direction: str, n_rows: int, n_cols: int, dtype: torch.dtype, device: torch.device,
            min_cols: int = MIN_COLS) -> bool:  # fmt: skip
    """Whether a launch goes to the cluster kernel (launch.route): N and dtype alone, on sm_90. min_cols: the
    softmax's MIN_COLS, but for 16-bit rows not whole 16-byte packs (the tiles move them two bytes an access)
    MIN_ODD_16BIT_COLS; the family's, that bound: the first row too long for a program's registers (choose())."""
    if INTERPRET or device.type != "cuda" or dtype not in DTYPES or n_rows < 1:
        return False
    min_cols = min(min_cols, MIN_ODD_16BIT_COLS) if dtype.itemsize == 2 and n_cols % 8 else min_cols
    index = device.index if device.index is not None else torch.cuda.current_device()
    fits = n_cols <= PORTABLE_COLS or index not in REFUSED
    return min_cols <= n_cols <= MAX_COLS and _capable(index) and fits


def packs(tensors: list[torch.Tensor]) -> int:
    """VEC, the elements of a 16-byte pack, where Triton cannot see that rows are whole packs (it
    specializes N and strides on divisibility by 16) but every tensor's rows sit at one offset from
    a 16-byte boundary (aligned bases, equal strides): rows split into head, body and tail; else 0."""
    stride = tensors[0].stride(0)
    triton_sees = stride % 16 == 0 and tensors[0].shape[1] % 16 == 0
    one_offset = all(t.data_ptr() % 16 == 0 and t.stride(0) == stride for t in tensors)
    return 16 // tensors[0].element_size() if one_offset and not triton_sees else 0


# (warps, register cap) by fp32 of log_softmax's forward past 8192 * MAX_CLUSTER columns: x unspilled
# across the exchange, SMs shared so that one block's loads overlap another's exchange; each the H100's best.
LONG_LOG_FWD = {True: (8, 128), False: (8, 80)}
# Blocks past 131072 columns, by fp32: (C, first tile, warps, register cap, widest second tile); one 16384-wide
# tile over 16 blocks leaves up to 7/16 of its lanes past the row, their registers held. The forwards (to 163840;
# 8192 + 4096 was no faster than one tile): fp32 16 blocks, three an SM unspilled; 16-bit 8 blocks, 80 elements a
# thread packed, four an SM in 64 registers. The fp32 backward of whole packs, two blocks an SM under its own cap
# (block()): y and dy of both tiles held, or (the softmax's, reload: to 262144 columns) y alone (RELOAD).
TWO_TILES = {True: (16, 8192, 8, 80, 2048), False: (8, 16384, 8, 64, 4096)}


@functools.cache  # on the call path, as block
def tiles(n_cols: int, dtype: torch.dtype, reload: bool = False) -> tuple[int, int, int, int, int] | None:
    """(C, CHUNK, CHUNK2, warps, register cap) of TWO_TILES' blocks past 8192 * MAX_CLUSTER columns: CHUNK2 the
    narrowest power-of-two tile, at least a 16-byte pack a thread, bringing C blocks to the row's end; else None."""
    c, first, warps, cap, widest = TWO_TILES[dtype == torch.float32]
    widest = first if reload and dtype == torch.float32 else widest
    extra = next_pow2(max(32 * warps * (16 // dtype.itemsize), -(-n_cols // c) - first))
    return (c, first, extra, warps, cap) if n_cols > 8192 * MAX_CLUSTER and extra <= widest else None


@functools.cache  # on log_softmax's call path; the dict is shared: callers copy, never change it
def kernel_for(direction: str, n_cols: int, dtype: torch.dtype, vec: int = 0, op: str = "softmax"):
    """(kernel, constexprs, warps, register cap) that compiled_launch (and the sm_90 tests) compile;
    op: "softmax" or "log_softmax" (the cross-entropy's forward: xent_cluster.kernel_for)."""
    chunk, warps, maxnreg = block(n_cols, direction, dtype)  # the same chunk both directions, every dtype
    if op == "log_softmax" and direction == "fwd" and maxnreg is not None:  # x held as it is read, not exp(x)
        warps, maxnreg = LONG_LOG_FWD[dtype == torch.float32]
    c, chunk2, log, fp32 = blocks(n_cols, chunk), 0, op == "log_softmax", dtype == torch.float32
    two = tiles(n_cols, dtype, direction == "bwd" and not log)  # log_softmax's loads y during the exchange
    if two is not None and (direction == "fwd" or fp32 and not vec):
        c, chunk, chunk2, warps, maxnreg = two if direction == "fwd" else (*two[:4], maxnreg)
    sizes = {"C": c, "SLOTS": next_pow2(c), "CHUNK": chunk, "CHUNK2": chunk2}
    if direction == "bwd":
        meta = {**sizes, "VEC": vec, "LOG": log, "THREADS": 32 * warps, "RELOAD": chunk2 > TWO_TILES[True][4]}
        return cluster_bwd_kernel, meta, warps, maxnreg
    # masked where the blocks pass the row, and 16-bit log_softmax's two tiles always (Triton 3.6 spilled unmasked)
    exact = n_cols == c * (chunk + chunk2) and not (log and chunk2 and not fp32)
    if fp32 and not log and maxnreg is None and c == MAX_CLUSTER:  # 16 blocks of held exponentials: twice
        warps = 8  # the warps cover the loads' latency where few rows' clusters fill the card
    constexprs = {**sizes, "NEEDS_MASK": not exact, "COMPENSATED": fp32, "VEC": vec, "HOLD_EXPS": fp32 and not log,
                  "THREADS": 32 * warps, "LOG": log}  # fmt: skip
    return cluster_fwd_kernel, constexprs, warps, maxnreg


def compiled_launch(direction: str, tensors: list[torch.Tensor]):
    """The softmax kernel of `direction` ("fwd": x, y; "bwd": y, dy, dx) compiled for `tensors'`
    layout (2-D, unit column stride), its launch metadata and the arguments after the pointers."""
    n, strides = tensors[0].shape[1], tuple(t.stride(0) for t in tensors)
    kernel, constexprs, warps, maxnreg = kernel_for(direction, n, tensors[0].dtype, packs(tensors))
    compiled = kernel.warmup(*tensors, n, *strides, 0, **constexprs, grid=(1,), num_warps=warps,
                             num_stages=1, **({} if maxnreg is None else {"maxnreg": maxnreg}))  # fmt: skip
    compiled._init_handles()
    slot_base, packed = exchange_metadata(compiled, warps, constexprs["C"])
    return compiled, packed, (n, *strides, slot_base, *constexprs.values())


def exchange_metadata(compiled, warps: int, c: int) -> tuple[int, tuple]:
    """(slot_base, launch metadata) of a compiled cluster kernel: the exchange (an mbarrier and SLOTS pairs,
    dsmem.exchange) starts past Triton's shared memory, 16-byte aligned; the metadata asks for clusters of C
    blocks, which Triton's launcher would not pass."""
    slot_base = -(-compiled.metadata.shared // 16) * 16
    return slot_base, (warps, c, slot_base + 8 + 8 * next_pow2(c))


@triton.jit(do_not_specialize=["slot_base"])
def cluster_fwd_kernel(
    x_ptr, y_ptr, N, x_row_stride, y_row_stride, slot_base,
    C: tl.constexpr, SLOTS: tl.constexpr, CHUNK: tl.constexpr,
    CHUNK2: tl.constexpr,  # > 0: a second tile of the block's columns, past its first CHUNK (tiles())
    NEEDS_MASK: tl.constexpr,  # the row is not exactly C spans
    COMPENSATED: tl.constexpr,  # fp32: the sums carry their rounding errors (row_sum)
    VEC: tl.constexpr,  # > 0: rows off 16-byte boundaries, split into head, body and tail (split_row)
    HOLD_EXPS: tl.constexpr,  # hold exp(x - m) in fp32 across the exchange, not x
    THREADS: tl.constexpr,  # 32 * the launch's warps (partial)
    LOG: tl.constexpr,  # log_softmax: y = (x - M) - log S (x held, not its exponentials)
):  # fmt: skip
    pid = tl.program_id(0)
    row = (pid // C).to(tl.int64)  # int64: row * stride may pass 2**31
    rank = pid % C  # = %cluster_ctarank: a cluster is C consecutive blocks
    SPAN: tl.constexpr = CHUNK + CHUNK2  # the block's columns
    cols = rank * SPAN + tl.arange(0, CHUNK)
    x_row, y_row = x_ptr + row * x_row_stride, y_ptr + row * y_row_stride
    if VEC > 0:  # the body in whole packs, the head and tail (x_edges) an element at a time
        head, body, in_body, edges, in_edges = D.split_row(row, x_row_stride, 0, rank, N, C, SPAN, CHUNK, VEC)
        x_first = x_ptr + tl.multiple_of(row * x_row_stride + head + rank * SPAN, VEC)  # the block's body
        x = tl.load(x_first + tl.arange(0, CHUNK), mask=in_body, other=float("-inf"))
        x_edges = tl.load(x_row + edges, mask=in_edges, other=float("-inf")).to(tl.float32)
    elif NEEDS_MASK:
        x = tl.load(x_row + cols, mask=cols < N, other=float("-inf"))
    else:
        x = tl.load(x_row + cols)
    if CHUNK2 > 0:  # masked: TWO_TILES' rows end in a block's second tile
        lanes2 = CHUNK + tl.arange(0, CHUNK2)
        if VEC > 0:  # the body, from head
            in_row2 = rank * SPAN + lanes2 < body
            x2 = tl.load(x_first + lanes2, mask=in_row2, other=float("-inf"))
        else:
            in_row2 = rank * SPAN + lanes2 < N
            x2 = tl.load(x_row + rank * SPAN + lanes2, mask=in_row2, other=float("-inf"))
    # The chunk's partial (m, s); a chunk of all -inf: m = -inf, s = 0. x stays in its dtype.
    if HOLD_EXPS:  # exponentials relative to the chunk's max, held: the max, then their sum
        m = tl.reduce(x, 0, D.maximum).to(tl.float32)
        if CHUNK2 > 0:
            m = tl.maximum(m, tl.reduce(x2, 0, D.maximum).to(tl.float32))
        if VEC > 0:
            m = tl.maximum(m, tl.max(x_edges, axis=0))
        e = tl.exp2((x.to(tl.float32) - D.shift(m)) * LOG2E)
        s = D.row_sum(e, COMPENSATED)
        if CHUNK2 > 0:
            e2 = tl.exp2((x2.to(tl.float32) - D.shift(m)) * LOG2E)
            s += D.row_sum(e2, COMPENSATED)
        if VEC > 0:
            s += D.row_sum(tl.exp2((x_edges - D.shift(m)) * LOG2E), COMPENSATED)
    else:  # 16 bits, or LOG: x is taken again after the exchange, so one reduction of pairs
        m, s = D.partial(x, THREADS)
        if CHUNK2 > 0:
            m2, s2 = D.partial(x2, THREADS)
            m, s = D.pair(m, s, m2, s2)
        if VEC > 0:
            m_edges = tl.max(x_edges, axis=0)
            m, s = D.pair(m, s, m_edges, tl.sum(tl.exp2((x_edges - D.shift(m_edges)) * LOG2E), axis=0))
    m_all, s_all = D.exchange(m, s, slot_base, rank, C, SLOTS)
    # The row's (M, S): a chunk with m = -inf adds its s unscaled (0, or NaN: a NaN among -infs must make the row NaN).
    m_row = tl.max(m_all, axis=0)
    weight = tl.exp2((D.shift(m_all) - m_row) * LOG2E)
    s_row = D.row_sum(tl.where(m_all == float("-inf"), s_all, s_all * weight), COMPENSATED)
    # A row of all -inf (M = -inf) writes NaN, and a +inf or NaN makes S NaN: torch's results.
    y = _normalize(e if HOLD_EXPS else x, m, m_row, s_row, HOLD_EXPS, LOG)
    if CHUNK2 > 0:
        y2 = _normalize(e2 if HOLD_EXPS else x2, m, m_row, s_row, HOLD_EXPS, LOG)
    if VEC > 0:
        y_first = y_ptr + tl.multiple_of(row * y_row_stride + head + rank * SPAN, VEC)
        tl.store(y_first + tl.arange(0, CHUNK), y.to(y_ptr.dtype.element_ty), mask=in_body)
        if CHUNK2 > 0:
            tl.store(y_first + lanes2, y2.to(y_ptr.dtype.element_ty), mask=in_row2)
        y_edges = _normalize(x_edges, m, m_row, s_row, False, LOG)  # fp32, not held
        tl.store(y_row + edges, y_edges.to(y_ptr.dtype.element_ty), mask=in_edges)
    elif NEEDS_MASK:
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=cols < N)
    else:
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty))
    if CHUNK2 > 0 and VEC == 0:  # (VEC > 0: the body's second tile, above)
        tl.store(y_row + rank * SPAN + lanes2, y2.to(y_ptr.dtype.element_ty), mask=in_row2)


@triton.jit
def _normalize(v, m, m_row, s_row, HOLD_EXPS: tl.constexpr, LOG: tl.constexpr):
    """A tile's y from the row's (M, S): v is x or, HOLD_EXPS, exp(x - m) relative to the chunk's max m."""
    if LOG:
        return (D.widen(v) - m_row) - tl.log(s_row)
    elif HOLD_EXPS:  # y = exp(x - m) * (exp(m - M) / S): a chunk of all -inf gives 0 * 0
        return v * (tl.exp2((m - m_row) * LOG2E) * (1.0 / s_row))
    else:  # y = exp(x - M) / S from the packed x, as in F.softmax
        return D.normalized(v, m_row, 1.0 / s_row)


@triton.jit
def _grad_partial(y, dy, LOG: tl.constexpr, THREADS: tl.constexpr):
    """A tile's share of the row's sum: of y * dy; log_softmax's, of dy in dsmem.partial's layout (a pack, the
    thread's packs, then across threads): a thread's values in one sequence summed no better than torch."""
    pack: tl.constexpr = 128 // dy.dtype.primitive_bitwidth
    if LOG:
        packs = tl.reshape(dy.to(tl.float32), [dy.shape[0] // (THREADS * pack), THREADS, pack])
        return tl.sum(tl.sum(tl.sum(packs, 2), 0), 0)
    else:
        return tl.sum(y.to(tl.float32) * dy.to(tl.float32), axis=0)


@triton.jit
def _grad(y, dy, total, LOG: tl.constexpr):
    """A tile's dx from the row's sum: dy - exp(y) * total (log_softmax's), else y * (dy - total)."""
    return D.widen(dy) - exp(D.widen(y)) * total if LOG else D.widen(y) * (D.widen(dy) - total)


@triton.jit(do_not_specialize=["slot_base"])
def cluster_bwd_kernel(
    y_ptr, dy_ptr, dx_ptr, N, y_row_stride, dy_row_stride, dx_row_stride, slot_base,
    C: tl.constexpr, SLOTS: tl.constexpr, CHUNK: tl.constexpr,
    CHUNK2: tl.constexpr,  # > 0 (VEC = 0): a second tile of the block's columns, past its first CHUNK (tiles())
    VEC: tl.constexpr,  # > 0: rows off 16-byte boundaries, split into head, body and tail (split_row)
    LOG: tl.constexpr,  # log_softmax's: dx = dy - exp(y) * sum(dy) (softmax's: y * (dy - sum(y * dy)))
    THREADS: tl.constexpr,  # 32 * the launch's warps (LOG's sum)
    RELOAD: tl.constexpr,  # (CHUNK2 > 0) y held across the exchange, dy read again after it (from L2)
):  # fmt: skip
    pid = tl.program_id(0)
    row = (pid // C).to(tl.int64)
    rank = pid % C
    if VEC > 0:  # equal row strides (packs): one offset serves y, dy and dx
        head, _, in_body, edges, in_edges = D.split_row(row, y_row_stride, 0, rank, N, C, CHUNK, CHUNK, VEC)
        body = tl.multiple_of(row * y_row_stride + head + rank * CHUNK, VEC) + tl.arange(0, CHUNK)
        y = tl.load(y_ptr + body, mask=in_body, other=0.0)
        dy = tl.load(dy_ptr + body, mask=in_body, other=0.0)
        edges += row * y_row_stride  # the head's and tail's columns, in the row
        y_edges = tl.load(y_ptr + edges, mask=in_edges, other=0.0).to(tl.float32)
        dy_edges = tl.load(dy_ptr + edges, mask=in_edges, other=0.0).to(tl.float32)
        d = _grad_partial(y, dy, LOG, THREADS) + tl.sum(dy_edges if LOG else y_edges * dy_edges, axis=0)
    else:
        cols = rank * (CHUNK + CHUNK2) + tl.arange(0, CHUNK)
        y = tl.load(y_ptr + row * y_row_stride + cols, mask=cols < N, other=0.0)
        dy = tl.load(dy_ptr + row * dy_row_stride + cols, mask=cols < N, other=0.0)
        d = _grad_partial(y, dy, LOG, THREADS)
        if CHUNK2 > 0:  # TWO_TILES' rows, two blocks an SM: y and dy of both tiles held, or y alone (RELOAD)
            if RELOAD:  # the first dy summed, its registers free, before the second tile's loads
                tl.debug_barrier()
            cols2 = rank * (CHUNK + CHUNK2) + CHUNK + tl.arange(0, CHUNK2)
            y2 = tl.load(y_ptr + row * y_row_stride + cols2, mask=cols2 < N, other=0.0)
            dy2 = tl.load(dy_ptr + row * dy_row_stride + cols2, mask=cols2 < N, other=0.0)
            d += _grad_partial(y2, dy2, LOG, THREADS)
    _, d_all = D.exchange(0.0, d, slot_base, rank, C, SLOTS)  # the sums as s: unused slots add 0
    total = tl.sum(d_all, axis=0)
    if RELOAD:
        dy = tl.load(dy_ptr + row * dy_row_stride + cols, mask=cols < N, other=0.0)
    dx = _grad(y, dy, total, LOG).to(dx_ptr.dtype.element_ty)
    if VEC > 0:
        tl.store(dx_ptr + body, dx, mask=in_body)
        tl.store(dx_ptr + edges, _grad(y_edges, dy_edges, total, LOG).to(dx.dtype), mask=in_edges)
    else:
        dx_row = dx_ptr + row * dx_row_stride
        tl.store(dx_row + cols, dx, mask=cols < N)
        if CHUNK2 > 0:
            if RELOAD:
                dy2 = tl.load(dy_ptr + row * dy_row_stride + cols2, mask=cols2 < N, other=0.0)
            tl.store(dx_row + cols2, _grad(y2, dy2, total, LOG).to(dx.dtype), mask=cols2 < N)
