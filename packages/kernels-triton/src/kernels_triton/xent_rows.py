"""The row helpers of xent_kernels' kernels: pointers, masks, the split of a row off 16-byte
boundaries, and a row's statistics.

Triton moves a tile as 16-byte vectors only where it can prove every pack of the tile whole and
16-byte aligned: from its specialisation (pointers, N and row strides divisible by 16) or from
hints (ALIGN: the largest power of two, up to a pack, dividing N and every stride). A row of
GPT-2's V = 50257 is neither, and would move an element at a time. So the looped kernels take
such a row (VEC > 0) as a head, up to its first 16-byte boundary, a body of whole packs of VEC
elements that the tiles move as vectors (the body's pointer and length carry multiple_of
hints), and a tail; head and tail, fewer than VEC elements each, go an element at a time as
2 * VEC lanes (split).

Invariant: the split follows N, the dtype and the row's offset from a 16-byte boundary, off =
OFF + row * stride (OFF: where the tensor's base sits past a boundary), and nothing else (not M,
not the other tensors' layouts); so does a row's arithmetic. A row gives the same bits in any
batch that puts it at the same offset mod 16 bytes. At offset 0, a row of whole packs has no
head and no tail, and its arithmetic is the plain tiles' (VEC = 0) bit for bit.
"""

from __future__ import annotations

import triton
import triton.language as tl

from kernels_triton.configs import INTERPRET

NEG_INF = tl.constexpr(float("-inf"))


_ASM = tl.constexpr(not INTERPRET)  # inline PTX compiles for a GPU; the interpreter has none


@triton.jit
def exp(x):
    """exp(x): for fp32, ex2.approx.ftz of x * log2(e), the instruction the hardware has, where
    tl.exp adds a fix-up around it for results below 2**-126 (those flush to 0 here: an absolute
    error under 1.2e-38). The family's kernels take every exponential from here, so that the
    forward's gradient and the backward's recompute round alike. fp64: tl.exp."""
    if x.dtype.is_fp64() or not _ASM:
        return tl.exp(x)
    else:
        return tl.inline_asm_elementwise(
            "ex2.approx.ftz.f32 $0, $1;",
            "=f,f",
            [x * 1.4426950408889634],
            dtype=tl.float32,
            is_pure=True,
            pack=1,
        )


@triton.jit
def to_acc(x, IS_FP64: tl.constexpr):
    """x widened to the accumulator type."""
    if IS_FP64:
        return x.to(tl.float64)
    else:
        return x.to(tl.float32)


@triton.jit
def row_start(ptr, row, stride, ALIGN: tl.constexpr):
    """Pointer to the start of row `row` (int64 offsets: M * stride may pass 2**31). ALIGN
    divides every row stride (align()): the hint lets the compiler use 16-byte vectors."""
    return ptr + tl.multiple_of(tl.cast(row, tl.int64) * stride, ALIGN)


@triton.jit
def lanes_in_row(cols, N, ALIGN: tl.constexpr):
    """cols < N, written so that the compiler sees the mask constant over runs of ALIGN lanes
    (ALIGN divides N): masked loads and stores stay vectors."""
    return cols // ALIGN < N // ALIGN


@triton.jit
def exp_ref(m):
    """The reference point for exponentials: the max, or 0 while the max is -inf."""
    return tl.where(m == NEG_INF, 0.0, m)


@triton.jit
def acc_const(value: tl.constexpr, IS_FP64: tl.constexpr):
    """A Python float in the accumulator type, not rounded through fp32 on the way."""
    if IS_FP64:
        return tl.full([], value, tl.float64)
    else:
        return tl.full([], value, tl.float32)


@triton.jit
def split(off, N, VEC: tl.constexpr):
    """A row of N elements starting `off` elements past a 16-byte boundary as (head, body,
    edges, in_edges): columns [0, head) reach the first boundary, [head, head + body) are whole
    packs of VEC elements, the rest is the tail; edges are the head's and the tail's columns as
    2 * VEC lanes (head, then tail), in_edges which of them are elements. VEC = 0: the row is
    whole packs from a boundary (the plain tiles): (0, N, -, no lanes)."""
    if VEC > 0:
        head = ((VEC - off % VEC) % VEC).to(tl.int32)  # not capped at N: off + head is whole packs
        body = tl.maximum(N - head, 0) // VEC * VEC  # int32, as N: the tiles' masks stay 32-bit
        lanes = tl.arange(0, 2 * VEC)
        edges = tl.where(lanes < VEC, lanes, head + body + lanes - VEC)
        in_edges = tl.where(lanes < VEC, (lanes < head) & (lanes < N), edges < N)
        return head, body, edges, in_edges
    else:
        return 0, N, 0, False


@triton.jit
def body_col(t, head, N):
    """Column t of the row as a column of its body, int32 (a tile's compares with it stay 32-bit);
    -1, no column, where t is not in the row."""
    return tl.where((t >= 0) & (t < N), t - head, -1).to(tl.int32)


@triton.jit
def body_ptr(ptr, row, stride, head, ALIGN: tl.constexpr, VEC: tl.constexpr, HINT: tl.constexpr):
    """Pointer to column `head` of row `row` of ptr. HINT (with VEC > 0): the caller knows that
    this row of ptr sits at the offset from a 16-byte boundary its head was split from, so the
    body starts on a boundary. The hint is on the address itself: an offset hint (OFF + row *
    stride + head a multiple of VEC) proves nothing unless Triton specialised OFF as 0 and ptr as
    aligned, so a tensor based off a boundary would move its body an element at a time, in
    another register layout, and its row sums (tl.sum's order follows the layout) would differ
    in the last bit from the same row in an aligned batch."""
    if VEC > 0 and HINT:
        return tl.multiple_of(row_start(ptr, row, stride, ALIGN) + head, 16)
    else:
        return row_start(ptr, row, stride, ALIGN) + head


@triton.jit
def tile_stats(x, valid, SUM_X: tl.constexpr, SUM_XE: tl.constexpr):
    """A row held whole in registers (x; -inf where not valid): (max, e = exp(x - R),
    S = sum e, sum (x - R) over valid entries, sum e (x - R)), R = exp_ref(max). e is returned
    for the epilogue (the softmax is e / S): one exponential an element."""
    big = tl.max(x, 0)
    r = exp_ref(big)
    e = exp(x - r)
    total = tl.sum(e, 0)
    sum_x = 0.0
    sum_xe = 0.0
    if SUM_X:
        sum_x = tl.sum(tl.where(valid, x - r, 0.0), 0)
    if SUM_XE:
        sum_xe = tl.sum(tl.where(x == NEG_INF, 0.0, e * (x - r)), 0)
    return big, e, total, sum_x, sum_xe


@triton.jit
def row_stats(
    x_row, x_body, body, edges, in_edges, N,
    BLOCK: tl.constexpr, PACK: tl.constexpr, VEC: tl.constexpr, IS_FP64: tl.constexpr,
    SUM_X: tl.constexpr, SUM_XE: tl.constexpr,
):  # fmt: skip
    """Pass 1 of the looped path: tile_stats' (max, S, sum (x - R), sum e (x - R)) from one
    read of the row: head and tail first (VEC > 0; split), their sums in lane 0, then the
    body (x_body: `body` elements, a multiple of PACK) in BLOCK-wide tiles. The running max is
    the row's so far (one max across the program a tile); every lane's sums are relative to
    it and are moved to the new one, by one exponential a tile, when it grows: one
    exponential an element. All lanes share the reference, so the sum of x - R over the
    elements already seen (the edges', then every full body tile before this one) moves by
    their count times the change."""
    cols = tl.arange(0, BLOCK)
    zero = to_acc(tl.zeros([BLOCK], tl.float32), IS_FP64)
    s = zero
    sx = zero
    w = zero
    big = acc_const(float("-inf"), IS_FP64)
    shift = acc_const(0.0, IS_FP64)
    seen = 0
    if VEC > 0:
        xe = tl.load(x_row + edges, mask=in_edges, other=float("-inf"), eviction_policy="evict_last")
        big, _, s_edges, sx_edges, w_edges = tile_stats(to_acc(xe, IS_FP64), in_edges, SUM_X, SUM_XE)
        s = tl.where(cols == 0, s_edges, zero)
        if SUM_X:
            sx = tl.where(cols == 0, sx_edges, zero)
            seen = N - body
        if SUM_XE:
            w = tl.where(cols == 0, w_edges, zero)
    for start in range(0, body, BLOCK):
        c = start + cols
        valid = lanes_in_row(c, body, PACK)
        x = to_acc(
            tl.load(x_body + c, mask=valid, other=float("-inf"), eviction_policy="evict_last"), IS_FP64
        )
        new = tl.maximum(big, tl.max(x, 0))
        r_old = exp_ref(big)
        r_new = exp_ref(new)
        scale = exp(big - r_new)
        e = exp(x - r_new)
        if SUM_XE:
            moved = tl.where(scale > 0, scale * (w + s * (r_old - r_new)), 0.0)
            w = moved + tl.where(x == NEG_INF, 0.0, e * (x - r_new))
        s = s * scale + e
        if SUM_X:
            shift += (seen + start) * (r_old - r_new)
            sx += tl.where(valid, x - r_new, 0.0)
        big = new
    sum_x = 0.0
    sum_xe = 0.0
    if SUM_X:
        sum_x = tl.sum(sx, 0) + shift
    if SUM_XE:
        sum_xe = tl.sum(w, 0)
    return big, tl.sum(s, 0), sum_x, sum_xe
