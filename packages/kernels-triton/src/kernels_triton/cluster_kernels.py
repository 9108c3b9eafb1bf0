"""The cluster softmax kernels: a row over the blocks of a thread-block cluster, the exchange in PTX.

    y  = softmax(x)              along the last dim of (M, N) rows, 32768 <= N <= 262144, sm_90
    dx = y * (dy - sum(y * dy))  the backward, from the saved output y

The device code; cluster.py chooses a launch's block and compiles and launches it.

Why a cluster. The split-row kernels (split_row.py) hold a row in several programs and exchange
each program's partials through global memory: publish, then poll the peers' words, a round
trip through L2 on every row and a spin while a peer is late. On sm_90 a row can instead go to
the C blocks of one thread-block cluster, which the hardware schedules together, and the
partials travel through distributed shared memory: every block pushes its partial into every
block's shared memory (st.async, which counts the bytes on the receiver's mbarrier), waits until
its own C have landed, and merges them. No scratch buffer, no polling of global memory, no
fallback for a peer that never comes: the blocks of a cluster run together by construction.
Each block reads its chunk once and writes its chunk once, so a row costs the least traffic there
is (2 accesses per element forward, 3 backward). The partials: forward the chunk's (max m, sum
of exp(x - m)), merged by the rescaling rule of split_row.py; backward the chunk's sum of y * dy.
A forward that holds its exponentials across the exchange needs the chunk's max before them, so
it reduces the chunk twice, the max and then the sum; one that takes them again after the
exchange (16 bits, many waves) reduces (max, sum) pairs once (_partial), half the block
barriers.

How Triton builds it. Triton 3.6 compiles no row reduction with num_ctas > 1, so a kernel is
compiled for one block and launched as a cluster by its own launcher, given num_ctas = C in the
launch metadata: the grid is then M * C blocks, block b is rank b % C of the cluster that takes
row b // C. Triton's reductions use the start of the block's dynamic shared memory
(global_smem); the exchange's mbarrier and C slots sit past what Triton allocates (slot_base),
and the launch asks for that much more. Inline PTX is all the exchange needs (_exchange): mbarrier
init, arrive and wait, a relaxed cluster barrier, mapa (a peer's address of a shared variable),
st.async, ld.shared. A 16-bit chunk stays packed in registers, two values to one, and is
widened a pair at a time, also in inline PTX (WIDEN_PAIR): so the forward's blocks of 16384
fit five to an SM. An fp32 chunk's exponentials take the registers its x would, so the fp32
forward holds exp(x - m) across the exchange and only rescales it after (HOLD_EXPS), where a
launch of one wave waits on every instruction after the exchange.

Rows that do not start on a 16-byte boundary (an odd N) are split into a head, a body of whole
16-byte packs, which the blocks' chunks cover, and a tail, which the last block takes an element at
a time (_split_row); read an element at a time, such rows moved 2 or 4 bytes a load instruction and
took far more registers.

Where it is used (kernels_triton.launch), on sm_90, for rows of 32768 to 262144 columns. A
block holds one chunk: 8192 elements over 4 warps for rows of up to 16 * 8192 columns, 16384 with
capped registers for longer ones (over 4 warps in the 16-bit forward, 8 in the others), and a
forward launch that fits one wave of blocks takes 8 warps a block with its exponentials held
(cluster._block); C = ceil(N / chunk) rounded up to a power of two (a block past the row's end reads
nothing and adds nothing; 16-block clusters are a non-portable size, which H100 and H200 allow):
- the forward at any row count: its exchange through shared memory has no round trip through
  L2 and no polling, which the split-row forward's has;
- the backward at any row count, in fp32 up to 131072 columns (max_cols), where its blocks still
  fit without spilling.
The timings behind both are in the per-card results pages.
"""

from __future__ import annotations

import struct

import triton
import triton.language as tl

from kernels_triton.kernels import LOG2E
from kernels_triton.partials import merge, row_sum, shift, store_chunk

# The exchange. A block's shared memory past Triton's own (from slot_base, which the launch adds):
#   [slot_base, +8)              an mbarrier: its phase completes when all C partials have landed
#   [slot_base + 8 + 8 * r, +8)  the partial of the cluster's block r, a pair of fp32
# Each block pushes its partial into its slot of every block's inbox with st.async, which counts
# the bytes it delivers on the receiver's mbarrier, and reads its own inbox once its mbarrier's
# phase completes. The blocks first meet at a cluster barrier with relaxed semantics, so that no
# push finds an uninitialised mbarrier. The release form (arrive.release), which also made the
# partials visible, orders a block's earlier global memory operations too: a GPU-scope fence
# (MEMBAR.ALL.GPU in the SASS), a top stall under ncu, which this exchange does not have. A block
# exits only after every push into its shared memory has landed (its phase completed), so no push
# targets a block that has left. Each asm below runs once a thread (scalar operands); the 0 or 1
# it returns goes into the next step's operands, which keeps the steps in order.


def inbox_bytes(c: int) -> int:
    """The shared memory the exchange adds past Triton's: the mbarrier and C pairs of fp32."""
    return 8 + 8 * c


# 16-bit chunks stay packed, two values a 32-bit register, from their load to their store: a
# thread's elements take half the registers of fp32 (16384-element blocks of 8 warps fit 4 to an
# SM in the forward, not 3; of 4 warps, 5: cluster._block). Triton would widen a whole tensor at once
# wherever a 16-bit value meets fp32 arithmetic, so the steps after the exchange widen a pair at
# a time in inline asm: more blocks an SM where a launch takes several waves (a launch of one
# wave takes the held form instead, cluster._block). WIDEN_PAIR: the PTX that widens the pair in
# register {x} into fp32 {lo} and {hi}, by the PTX name of the 16-bit type.
WIDEN_PAIR = {
    "bf16": "shl.b32 {lo}, {x}, 16; and.b32 {hi}, {x}, 0xffff0000;",  # a bf16 is its fp32's high half
    "f16": "{{ .reg .b16 l16, h16; mov.b32 {{l16, h16}}, {x}; cvt.f32.f16 {lo}, l16; cvt.f32.f16 {hi}, h16; }}",
}


def _normalized_asm(kind: str) -> str:
    """exp2((x - m) * log2 e) * inv_s for the pair in $1 (m in $2 and $3, inv_s in $4 and $5,
    the same value twice), packed into $0: the instructions Triton emits for the fp32 expression
    (log2 e rounded to fp32 as Triton rounds it), then the rounding pack of the store."""
    log2e = struct.pack(">f", LOG2E.value).hex().upper()
    return f"""{{
    .reg .f32 lo, hi;
    {WIDEN_PAIR[kind].format(lo="lo", hi="hi", x="$1")}
    sub.f32 lo, lo, $2;
    sub.f32 hi, hi, $3;
    mul.f32 lo, lo, 0f{log2e};
    mul.f32 hi, hi, 0f{log2e};
    ex2.approx.ftz.f32 lo, lo;
    ex2.approx.ftz.f32 hi, hi;
    mul.f32 lo, lo, $4;
    mul.f32 hi, hi, $5;
    cvt.rn.{kind}x2.f32 $0, hi, lo;
    }}"""


WIDEN_BF16 = tl.constexpr(WIDEN_PAIR["bf16"].format(lo="$0", hi="$1", x="$2"))
WIDEN_FP16 = tl.constexpr(WIDEN_PAIR["f16"].format(lo="$0", hi="$1", x="$2"))
NORMALIZED_BF16 = tl.constexpr(_normalized_asm("bf16"))
NORMALIZED_FP16 = tl.constexpr(_normalized_asm("f16"))


@triton.jit
def _widen(x):
    """x as fp32, a packed pair at a time: an asm the compiler may neither merge with another
    widening of x nor move ahead of the exchange, so that the backward holds y and dy packed
    across it."""
    if x.dtype.is_bf16() or x.dtype.is_fp16():
        asm: tl.constexpr = WIDEN_BF16 if x.dtype.is_bf16() else WIDEN_FP16
        return tl.inline_asm_elementwise(asm, "=r,=r,r", [x], dtype=tl.float32, is_pure=False, pack=2)
    else:
        return x


@triton.jit
def _normalized(x, m_row, inv_s):
    """exp(x - m_row) * inv_s in x's dtype: a 16-bit x a packed pair at a time (_normalized_asm),
    never all widened at once. (Triton widened every element before the first exponential: 80
    registers a thread where this takes 64, 16384 elements over 8 warps on sm_90.)"""
    if x.dtype.is_bf16() or x.dtype.is_fp16():
        asm: tl.constexpr = NORMALIZED_BF16 if x.dtype.is_bf16() else NORMALIZED_FP16
        return tl.inline_asm_elementwise(
            asm, "=r,r,f,f,f,f", [x, m_row, inv_s], dtype=x.dtype, is_pure=True, pack=2
        )
    else:
        return tl.exp2((x - m_row) * LOG2E) * inv_s


@triton.jit
def _maximum(a, b):
    """max(a, b) in a's dtype. A 16-bit max is one instruction (max.bf16, max.f16: the other
    operand where one is NaN, as tl.maximum); widened to fp32 and back, its widening was shared
    with the sum's, which then held the chunk in fp32 as well."""
    if a.dtype.is_bf16() or a.dtype.is_fp16():
        asm: tl.constexpr = "max.bf16 $0, $1, $2;" if a.dtype.is_bf16() else "max.f16 $0, $1, $2;"
        return tl.inline_asm_elementwise(asm, "=h,h,h", [a, b], dtype=a.dtype, is_pure=True, pack=1)
    else:
        return tl.maximum(a, b)


@triton.jit
def _pair(m1, s1, m2, s2):
    """Two partials (m, sum of exp(x - m)) as one: each sum rescaled to the larger max. Relative
    to shift(m): two chunks of all -inf give (-inf, 0); a NaN sum stays NaN (NaN * 0)."""
    m = tl.maximum(m1, m2)
    ref = shift(m)
    return m, s1 * tl.exp2((m1 - ref) * LOG2E) + s2 * tl.exp2((m2 - ref) * LOG2E)


@triton.jit
def _partial(x, THREADS: tl.constexpr):
    """The chunk's partial (m, s) by one reduction across threads, of (max, sum) pairs: each
    thread's pair first, then a tree of pairs (_pair), one barrier or two where a block max and
    then a block sum take two each. A thread holds R packs of PACK elements (16 bytes), THREADS *
    PACK elements apart: Triton's layout of the chunk's 16-byte loads, so the reshape to [R,
    THREADS, PACK] moves nothing and the reductions over axes 2 and 0 stay in the thread."""
    PACK: tl.constexpr = 128 // x.dtype.primitive_bitwidth
    x3 = tl.reshape(x, [x.shape[0] // (THREADS * PACK), THREADS, PACK])
    m_t = tl.reduce(tl.reduce(x3, 2, _maximum), 0, _maximum).to(tl.float32)  # [THREADS]
    e = tl.exp2((x3.to(tl.float32) - shift(m_t)[None, :, None]) * LOG2E)
    return tl.reduce((m_t, tl.sum(tl.sum(e, 2), 0)), 0, _pair)


@triton.jit
def _open_inbox(slot_base):
    """Thread 0 initialises the block's mbarrier (one arrival: its own, with the byte count);
    then every thread arrives on the cluster barrier, relaxed (_push waits on it)."""
    return tl.inline_asm_elementwise(
        asm="""{
        .reg .u32 t, bar;
        .reg .pred first;
        mov.u32 t, %tid.x;
        setp.eq.u32 first, t, 0;
        mov.u32 bar, global_smem;
        add.u32 bar, bar, $1;
        @first mbarrier.init.shared::cta.b64 [bar], 1;
        @first fence.mbarrier_init.release.cluster;
        barrier.cluster.arrive.relaxed.aligned;
        mov.u32 $0, 0;
        }""",
        constraints="=r,r",
        args=[slot_base],
        dtype=tl.int32,
        is_pure=False,
        pack=1,
    )


@triton.jit
def _push(m, s, slot_base, rank, C: tl.constexpr):
    """After the cluster barrier (every block's mbarrier is initialised): thread 0 announces the
    C * 8 bytes its inbox will receive, and thread r < C pushes (m, s) into slot `rank` of block
    r's inbox, counted on block r's mbarrier: each pair is sent exactly once."""
    return tl.inline_asm_elementwise(
        asm="""{
        .reg .u32 t, bar, slot, peer_bar, peer_slot;
        .reg .pred first, pusher;
        barrier.cluster.wait.aligned;
        mov.u32 t, %tid.x;
        mov.u32 bar, global_smem;
        add.u32 bar, bar, $3;
        add.u32 slot, bar, 8;
        mad.lo.u32 slot, $4, 8, slot;
        setp.eq.u32 first, t, 0;
        @first mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], $5;
        setp.lt.u32 pusher, t, $6;
        @pusher mapa.shared::cluster.u32 peer_slot, slot, t;
        @pusher mapa.shared::cluster.u32 peer_bar, bar, t;
        @pusher st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [peer_slot], {$1, $2}, [peer_bar];
        mov.u32 $0, 0;
        }""",
        constraints="=r,f,f,r,r,r,r",
        args=[m, s, slot_base, rank, C * 8, C],
        dtype=tl.int32,
        is_pure=False,
        pack=1,
    )


@triton.jit
def _wait_inbox(slot_base):
    """Returns 1 once the block's mbarrier has completed phase 0: all C pairs have landed and are
    visible to this thread (acquire at cluster scope). try_wait gives up after a time the hardware
    chooses, so it is retried."""
    return tl.inline_asm_elementwise(
        asm="""{
        .reg .u32 bar;
        .reg .pred done;
        mov.u32 bar, global_smem;
        add.u32 bar, bar, $1;
        wait_${:uid}:
        mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [bar], 0;
        @!done bra wait_${:uid};
        mov.u32 $0, 1;
        }""",
        constraints="=r,r",
        args=[slot_base],
        dtype=tl.int32,
        is_pure=False,
        pack=1,
    )


@triton.jit
def _exchange(m, s, slot_base, rank, C: tl.constexpr):
    """Every block's (m, s) of this row, as two [C] tensors in rank order. `m`, `s`: this block's
    partial (the backward sends its dot product as m, 0 as s)."""
    opened = _open_inbox(slot_base)
    pushed = _push(m, s, slot_base + opened, rank, C)
    full = _wait_inbox(slot_base + pushed)
    return _inbox(tl.arange(0, C), tl.broadcast_to(slot_base + full - 1, [C]))


@triton.jit
def _inbox(rank_from, base):
    """Slot `rank_from` of this block's inbox: the pair at byte offset base + 8 + 8 * rank_from."""
    return tl.inline_asm_elementwise(
        asm="""{
        .reg .u32 a;
        mov.u32 a, global_smem;
        add.u32 a, a, $3;
        mad.lo.u32 a, $2, 8, a;
        ld.shared.v2.f32 {$0, $1}, [a+8];
        }""",
        constraints="=f,=f,r,r",
        args=[rank_from, base],
        dtype=(tl.float32, tl.float32),
        is_pure=False,
        pack=1,
    )


@triton.jit
def _split_row(row, row_stride, rank, N, C: tl.constexpr, CHUNK: tl.constexpr, VEC: tl.constexpr):
    """A row that does not start on a 16-byte boundary, as its head (the elements before its
    first 16-byte boundary), its body of whole 16-byte packs of VEC elements, and its tail (what
    is left after the last whole pack). Every tensor's row starts row * row_stride elements past
    a 16-byte aligned base (the host sends only such layouts: equal strides, aligned bases).
    Returns the head's length, which of this block's CHUNK lanes of the body are in it (the
    block's chunk starts at row * row_stride + head + rank * CHUNK, whole packs: loads and stores
    move 16 bytes at a time), and the head's and the tail's columns as 2 * VEC lanes with which
    of them are elements: the last block takes them, an element at a time; the other blocks
    none."""
    head = (VEC - (row * row_stride) % VEC) % VEC
    body = tl.multiple_of((N - head) // VEC * VEC, VEC)
    in_body = rank * CHUNK + tl.arange(0, CHUNK) < body
    lanes = tl.arange(0, 2 * VEC)
    edge_cols = tl.where(lanes < VEC, lanes, head + body + lanes - VEC)
    in_edges = tl.where(lanes < VEC, lanes < head, edge_cols < N)
    return head, in_body, edge_cols, in_edges & (rank == C - 1)


@triton.jit(do_not_specialize=["slot_base"])
def cluster_fwd_kernel(
    x_ptr,
    y_ptr,
    N,
    x_row_stride,
    y_row_stride,
    slot_base,
    C: tl.constexpr,
    CHUNK: tl.constexpr,
    NEEDS_MASK: tl.constexpr,  # the row is not exactly C chunks
    COMPENSATED: tl.constexpr,  # fp32: the sums carry their rounding errors (partials.row_sum)
    VEC: tl.constexpr,  # > 0: rows off 16-byte boundaries, split into head, body and tail (_split_row)
    HOLD_EXPS: tl.constexpr,  # hold exp(x - m) in fp32 across the exchange, not x (see below)
    THREADS: tl.constexpr,  # 32 * the launch's warps (_partial)
):
    pid = tl.program_id(0)
    row = (pid // C).to(tl.int64)  # int64: row * stride may pass 2**31
    rank = pid % C  # = %cluster_ctarank: a cluster is C consecutive blocks
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    if VEC > 0:  # rows off 16-byte boundaries, which Triton would read an element at a time
        head, in_body, edge_cols, in_edges = _split_row(row, x_row_stride, rank, N, C, CHUNK, VEC)
        x_start = tl.multiple_of(row * x_row_stride + head + rank * CHUNK, VEC)
        y_start = tl.multiple_of(row * y_row_stride + head + rank * CHUNK, VEC)
        x = tl.load(x_ptr + x_start + tl.arange(0, CHUNK), mask=in_body, other=float("-inf"))
        x_edges = tl.load(x_row + edge_cols, mask=in_edges, other=float("-inf")).to(tl.float32)
    else:
        cols = rank * CHUNK + tl.arange(0, CHUNK)
        if NEEDS_MASK:
            x = tl.load(x_row + cols, mask=cols < N, other=float("-inf"))
        else:
            x = tl.load(x_row + cols)
    # The chunk's partial (m, s); a chunk of all -inf: m = -inf, s = 0. x stays in its storage
    # dtype until _normalized.
    if HOLD_EXPS:  # exponentials relative to the chunk's max, held: the max, then their sum
        if VEC > 0:
            m = tl.maximum(tl.reduce(x, 0, _maximum).to(tl.float32), tl.max(x_edges, axis=0))
        else:
            m = tl.reduce(x, 0, _maximum).to(tl.float32)
        e = tl.exp2((x.to(tl.float32) - shift(m)) * LOG2E)
        s = row_sum(e, COMPENSATED)
        if VEC > 0:
            s += row_sum(tl.exp2((x_edges - shift(m)) * LOG2E), COMPENSATED)
    else:  # 16 bits, many waves: taken again after the exchange, so one reduction of pairs
        m, s = _partial(x, THREADS)
        if VEC > 0:
            m_edges = tl.max(x_edges, axis=0)
            s_edges = tl.sum(tl.exp2((x_edges - shift(m_edges)) * LOG2E), axis=0)
            m, s = _pair(m, s, m_edges, s_edges)
    m_all, s_all = _exchange(m, s, slot_base, rank, C)
    m_row, s_row = merge(m_all, s_all, COMPENSATED)
    # An -inf element writes 0; a row of all -inf (M = -inf) writes NaN, and a +inf or NaN makes
    # S NaN and the row NaN: torch's results.
    if HOLD_EXPS:
        # y = exp(x - m) * (exp(m - M) / S): one multiply an element after the exchange, where a
        # launch of one wave waits on it; the chunk's exponentials in fp32 registers. A chunk of
        # all -inf: exp(m - M) = 0, so 0 * 0, not exp(0 - M) which may overflow.
        y = e * (tl.exp2((m - m_row) * LOG2E) * (1.0 / s_row))
    else:
        # y = exp(x - M) / S from the x the block holds, as in F.softmax: a 16-bit chunk stays
        # packed across the exchange (half the registers of its exponentials)
        y = _normalized(x, m_row, 1.0 / s_row)
    if VEC > 0:
        tl.store(y_ptr + y_start + tl.arange(0, CHUNK), y.to(y_ptr.dtype.element_ty), mask=in_body)
        y_edges = tl.exp2((x_edges - m_row) * LOG2E) * (1.0 / s_row)
        tl.store(y_row + edge_cols, y_edges.to(y_ptr.dtype.element_ty), mask=in_edges)
    else:
        store_chunk(y_row, cols, N, y, NEEDS_MASK)


@triton.jit(do_not_specialize=["slot_base"])
def cluster_bwd_kernel(
    y_ptr,
    dy_ptr,
    dx_ptr,
    N,
    y_row_stride,
    dy_row_stride,
    dx_row_stride,
    slot_base,
    C: tl.constexpr,
    CHUNK: tl.constexpr,
    VEC: tl.constexpr,  # > 0: rows off 16-byte boundaries, split into head, body and tail (_split_row)
):
    pid = tl.program_id(0)
    row = (pid // C).to(tl.int64)  # int64: row * stride may pass 2**31
    rank = pid % C  # = %cluster_ctarank: a cluster is C consecutive blocks
    if VEC > 0:
        head, in_body, edge_cols, in_edges = _split_row(row, y_row_stride, rank, N, C, CHUNK, VEC)
        body = tl.multiple_of(row * y_row_stride + head + rank * CHUNK, VEC) + tl.arange(0, CHUNK)
        y = tl.load(y_ptr + body, mask=in_body, other=0.0)
        dy = tl.load(dy_ptr + body, mask=in_body, other=0.0)
        edges = row * y_row_stride + edge_cols
        y_edges = tl.load(y_ptr + edges, mask=in_edges, other=0.0).to(tl.float32)
        dy_edges = tl.load(dy_ptr + edges, mask=in_edges, other=0.0).to(tl.float32)
        d = tl.sum(y.to(tl.float32) * dy.to(tl.float32), axis=0) + tl.sum(y_edges * dy_edges, axis=0)
    else:
        cols = rank * CHUNK + tl.arange(0, CHUNK)
        in_row = cols < N
        y = tl.load(y_ptr + row * y_row_stride + cols, mask=in_row, other=0.0)
        dy = tl.load(dy_ptr + row * dy_row_stride + cols, mask=in_row, other=0.0)
        d = tl.sum(y.to(tl.float32) * dy.to(tl.float32), axis=0)
    d_all, _ = _exchange(d, 0.0, slot_base, rank, C)
    dot = tl.sum(d_all, axis=0)
    if VEC > 0:
        tl.store(dx_ptr + body, (_widen(y) * (_widen(dy) - dot)).to(dx_ptr.dtype.element_ty), mask=in_body)
        dx_edges = y_edges * (dy_edges - dot)
        tl.store(dx_ptr + edges, dx_edges.to(dx_ptr.dtype.element_ty), mask=in_edges)
    else:
        dx = _widen(y) * (_widen(dy) - dot)
        tl.store(dx_ptr + row * dx_row_stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=in_row)
