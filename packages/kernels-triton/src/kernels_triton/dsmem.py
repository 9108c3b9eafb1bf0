"""A row over the blocks of a thread-block cluster (sm_90), the pieces cluster.py's kernels share: the
exchange of partials through distributed shared memory, the split of a row off 16-byte boundaries, a
chunk's partial in one reduction of pairs, and 16-bit chunks held packed two a register."""

from __future__ import annotations

import struct

import triton
import triton.language as tl

from kernels_triton.kernels import LOG2E

# 16-bit chunks stay packed, two a 32-bit register, from load to store (Triton widens a whole tensor
# where a 16-bit value meets fp32): after the exchange, inline asm widens a pair ({x} -> {lo}, {hi}).
WIDEN_PAIR = {
    "bf16": "shl.b32 {lo}, {x}, 16; and.b32 {hi}, {x}, 0xffff0000;",  # a bf16 is its fp32's high half
    "f16": "{{ .reg .b16 l16, h16; mov.b32 {{l16, h16}}, {x}; cvt.f32.f16 {lo}, l16; cvt.f32.f16 {hi}, h16; }}",
}


def _normalized_asm(kind: str) -> str:
    """exp2((x - m) * log2 e) * inv_s for the pair in $1 (m in $2, $3, inv_s in $4, $5) packed into
    $0: the instructions Triton emits for the fp32 expression, then the rounding pack."""
    log2e = struct.pack(">f", LOG2E.value).hex().upper()
    return f"""{{
    .reg .f32 lo, hi;
    {WIDEN_PAIR[kind].format(lo="lo", hi="hi", x="$1")}
    sub.f32 lo, lo, $2; sub.f32 hi, hi, $3;
    mul.f32 lo, lo, 0f{log2e}; mul.f32 hi, hi, 0f{log2e};
    ex2.approx.ftz.f32 lo, lo; ex2.approx.ftz.f32 hi, hi;
    mul.f32 lo, lo, $4; mul.f32 hi, hi, $5;
    cvt.rn.{kind}x2.f32 $0, hi, lo;
    }}"""


WIDEN_BF16, WIDEN_FP16 = (tl.constexpr(WIDEN_PAIR[k].format(lo="$0", hi="$1", x="$2")) for k in WIDEN_PAIR)
NORMALIZED_BF16, NORMALIZED_FP16 = (tl.constexpr(_normalized_asm(k)) for k in WIDEN_PAIR)


@triton.jit
def widen(x):
    """x as fp32, a packed pair at a time: not pure, so the compiler may neither merge it with
    another widening of x nor move it ahead of the exchange (the backward holds y, dy packed)."""
    if x.dtype.is_bf16() or x.dtype.is_fp16():
        asm: tl.constexpr = WIDEN_BF16 if x.dtype.is_bf16() else WIDEN_FP16
        return tl.inline_asm_elementwise(asm, "=r,=r,r", [x], dtype=tl.float32, is_pure=False, pack=2)
    else:
        return x


@triton.jit
def normalized(x, m_row, inv_s):
    if x.dtype.is_bf16() or x.dtype.is_fp16():
        asm: tl.constexpr = NORMALIZED_BF16 if x.dtype.is_bf16() else NORMALIZED_FP16
        return tl.inline_asm_elementwise(
            asm, "=r,r,f,f,f,f", [x, m_row, inv_s], dtype=x.dtype, is_pure=True, pack=2
        )
    else:
        return tl.exp2((x - m_row) * LOG2E) * inv_s


@triton.jit
def maximum(a, b):
    """max(a, b) in a's dtype (NaN as tl.maximum): one instruction, no widening shared with the sum's."""
    if a.dtype.is_bf16() or a.dtype.is_fp16():
        asm: tl.constexpr = "max.bf16 $0, $1, $2;" if a.dtype.is_bf16() else "max.f16 $0, $1, $2;"
        return tl.inline_asm_elementwise(asm, "=h,h,h", [a, b], dtype=a.dtype, is_pure=True, pack=1)
    else:
        return tl.maximum(a, b)


@triton.jit
def shift(m):
    """What exponents are taken relative to: the max, or 0 where it is -inf (exp(-inf - -inf) is NaN)."""
    return tl.where(m == float("-inf"), 0.0, m)


@triton.jit
def pair(m1, s1, m2, s2):
    m = tl.maximum(m1, m2)
    ref = shift(m)
    return m, s1 * tl.exp2((m1 - ref) * LOG2E) + s2 * tl.exp2((m2 - ref) * LOG2E)


@triton.jit
def partial(x, THREADS: tl.constexpr):
    """The chunk's partial (m, s) in one reduction of (max, sum) pairs across threads: half the block
    barriers of a max then a sum. A thread holds R packs of 16 bytes THREADS packs apart (the loads'
    layout): the reshape to [R, THREADS, PACK] moves nothing; the reductions over axes 2 and 0 stay in it."""
    PACK: tl.constexpr = 128 // x.dtype.primitive_bitwidth
    x3 = tl.reshape(x, [x.shape[0] // (THREADS * PACK), THREADS, PACK])
    m_t = tl.reduce(tl.reduce(x3, 2, maximum), 0, maximum).to(tl.float32)  # [THREADS]
    e = tl.exp2((x3.to(tl.float32) - shift(m_t)[None, :, None]) * LOG2E)
    return tl.reduce((m_t, tl.sum(tl.sum(e, 2), 0)), 0, pair)


@triton.jit
def _two_sum(a, a_err, b, b_err):
    """(a + a_err) + (b + b_err) as an fp32 sum and its rounding error (Knuth's TwoSum)."""
    s = a + b
    b_part = s - a
    a_part = s - b_part
    return s, (a - a_part) + (b - b_part) + a_err + b_err


@triton.jit
def row_sum(v, COMPENSATED: tl.constexpr):
    if COMPENSATED:
        s, err = tl.reduce((v, tl.zeros_like(v)), 0, _two_sum)
        return s + err
    else:
        return tl.sum(v, axis=0)


# The exchange, in a block's shared memory past Triton's own (from slot_base):
#   [slot_base, +8)              an mbarrier: its phase completes when all C partials have landed
#   [slot_base + 8 + 8 * r, +8)  the partial of the cluster's block r, a pair of fp32
# The blocks first meet at a relaxed cluster barrier, so that no push finds an uninitialised
# mbarrier (the release form would fence every earlier global access at GPU scope). A block exits
# only after every push into its shared memory has landed. Each asm runs once a thread; the 0 or 1
# it returns goes into the next step's operands, which keeps the steps in order.
@triton.jit
def exchange(m, s, slot_base, rank, C: tl.constexpr, SLOTS: tl.constexpr):
    """Every block's (m, s) of this row, two [SLOTS] tensors in rank order (SLOTS: C rounded up
    to a power of two, for tl.arange; the slots past C read as (-inf, 0), a chunk of nothing)."""
    opened = tl.inline_asm_elementwise(  # thread 0 initialises the mbarrier: one arrival, its own
        asm="""{ .reg .u32 t, bar; .reg .pred first;
        mov.u32 t, %tid.x; setp.eq.u32 first, t, 0; mov.u32 bar, global_smem; add.u32 bar, bar, $1;
        @first mbarrier.init.shared::cta.b64 [bar], 1; @first fence.mbarrier_init.release.cluster;
        barrier.cluster.arrive.relaxed.aligned; mov.u32 $0, 0; }""",
        constraints="=r,r", args=[slot_base], dtype=tl.int32, is_pure=False, pack=1,
    )  # fmt: skip
    # thread 0 announces the C * 8 bytes its inbox will receive; thread r < C pushes (m, s) into
    # slot `rank` of block r's inbox, counted on block r's mbarrier
    pushed = tl.inline_asm_elementwise(
        asm="""{ .reg .u32 t, bar, slot, peer_bar, peer_slot; .reg .pred first, pusher;
        barrier.cluster.wait.aligned; mov.u32 t, %tid.x;
        mov.u32 bar, global_smem; add.u32 bar, bar, $3; add.u32 slot, bar, 8; mad.lo.u32 slot, $4, 8, slot;
        setp.eq.u32 first, t, 0; @first mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], $5;
        setp.lt.u32 pusher, t, $6;
        @pusher mapa.shared::cluster.u32 peer_slot, slot, t; @pusher mapa.shared::cluster.u32 peer_bar, bar, t;
        @pusher st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [peer_slot], {$1, $2}, [peer_bar];
        mov.u32 $0, 0; }""",
        constraints="=r,f,f,r,r,r,r", args=[m, s, slot_base + opened, rank, C * 8, C],
        dtype=tl.int32, is_pure=False, pack=1,
    )  # fmt: skip
    # 1 once the mbarrier completed phase 0 (acquire at cluster scope); try_wait gives up after a
    # time the hardware chooses, so it is retried
    full = tl.inline_asm_elementwise(
        asm="""{ .reg .u32 bar; .reg .pred done; mov.u32 bar, global_smem; add.u32 bar, bar, $1;
        wait_${:uid}: mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [bar], 0;
        @!done bra wait_${:uid}; mov.u32 $0, 1; }""",
        constraints="=r,r", args=[slot_base + pushed], dtype=tl.int32, is_pure=False, pack=1,
    )  # fmt: skip
    m_all, s_all = tl.inline_asm_elementwise(  # slot r of the inbox: the pair at base + 8 + 8 * r
        asm="""{ .reg .u32 a; mov.u32 a, global_smem; add.u32 a, a, $3; mad.lo.u32 a, $2, 8, a;
        ld.shared.v2.f32 {$0, $1}, [a+8]; }""",
        constraints="=f,=f,r,r", args=[tl.arange(0, SLOTS), tl.broadcast_to(slot_base + full - 1, [SLOTS])],
        dtype=(tl.float32, tl.float32), is_pure=False, pack=1,
    )  # fmt: skip
    if SLOTS > C:  # slots no block pushes into: never written
        pushed_into = tl.arange(0, SLOTS) < C
        m_all, s_all = tl.where(pushed_into, m_all, float("-inf")), tl.where(pushed_into, s_all, 0.0)
    return m_all, s_all


@triton.jit
def split_row(row, row_stride, off, rank, N, C: tl.constexpr, SPAN: tl.constexpr, CHUNK: tl.constexpr,
              VEC: tl.constexpr):  # fmt: skip
    """A row off 16-byte boundaries (cluster.packs(); off: the tensor base's offset past one, in elements) as
    its head up to the first boundary, its body of whole packs of VEC elements that the blocks cover (a
    block's SPAN columns from row * row_stride + head + rank * SPAN), and its tail. Returns the head's length,
    the body's length, the lanes of the block's first CHUNK columns in the body, and the head's and tail's
    columns as 2 * VEC lanes with those the last block takes, an element at a time (the other blocks none)."""
    head = (VEC - (off + row * row_stride) % VEC) % VEC
    body = tl.multiple_of((N - head) // VEC * VEC, VEC)
    in_body = rank * SPAN + tl.arange(0, CHUNK) < body
    lanes = tl.arange(0, 2 * VEC)
    edge_cols = tl.where(lanes < VEC, lanes, head + body + lanes - VEC)
    in_edges = tl.where(lanes < VEC, lanes < head, edge_cols < N)
    return head, body, in_body, edge_cols, in_edges & (rank == C - 1)
