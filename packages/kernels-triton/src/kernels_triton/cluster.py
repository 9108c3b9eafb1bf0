"""The cluster form (sm_90) of kernels.py's forward and backward: a row of 32768 to 262144 columns
over the C blocks of a thread-block cluster, its partials exchanged through distributed shared memory.

What it buys: one program a row reads a row this long twice and leaves SMs idle at few rows. The
C blocks of a cluster, scheduled together, each read and write their chunk once (the least traffic
there is), push their partial (forward: the chunk's max m and sum of exp(x - m); backward: its sum
of y * dy) into every block's shared memory (_exchange) and merge the C partials. No scratch
buffer, no polling.

Triton compiles no row reduction with num_ctas > 1: the kernel is compiled for one block and
launched with num_ctas = C in its launch metadata, M * C blocks, block b rank b % C of row b // C.
C = ceil(N / chunk) rounded up to a power of two (a block past the row's end adds nothing; 16-block
clusters are a non-portable size, which H100 and H200 allow). A row's split (chunks; head, body and
tail, _split_row) follows N, the dtype and the row's address mod 16: a row keeps its bits in any
batch that puts it at the same alignment.
"""

from __future__ import annotations

import functools
import struct

import torch
import triton
import triton.language as tl

from kernels_triton.configs import DTYPES, INTERPRET
from kernels_triton.kernels import LOG2E

MAX_CLUSTER = 16
MIN_COLS, MAX_COLS = 32768, 16384 * MAX_CLUSTER


@functools.cache
def _capable(device_index: int) -> bool:
    """Clusters of up to 16 blocks: sm_90 (H100, H200)."""
    return torch.cuda.get_device_capability(device_index)[0] == 9


def _block(n_cols: int, direction: str, dtype: torch.dtype) -> tuple[int, int, int | None]:
    """(chunk, warps, register cap) of a block: past 8192 * MAX_CLUSTER columns, registers capped
    so that blocks share an SM and none spills (the offline SASS test holds the counts): fp32
    forward 3 blocks an SM, fp32 backward 64 values (y and dy) a thread, 16-bit forward 5 an SM."""
    if n_cols <= 8192 * MAX_CLUSTER:
        return 8192, 4, None
    if direction == "bwd":
        return (16384, 16, 128) if dtype == torch.float32 else (16384, 8, 128)
    return (16384, 8, 80) if dtype == torch.float32 else (16384, 4, 96)


def applies(direction: str, n_rows: int, n_cols: int, dtype: torch.dtype, device: torch.device) -> bool:
    """Whether a launch goes to the cluster kernel (launch.route): N and dtype alone, on sm_90."""
    if INTERPRET or device.type != "cuda" or dtype not in DTYPES or n_rows < 1:
        return False
    index = device.index if device.index is not None else torch.cuda.current_device()
    return MIN_COLS <= n_cols <= MAX_COLS and _capable(index)


def packs(tensors: list[torch.Tensor]) -> int:
    """VEC, the elements of a 16-byte pack, where Triton cannot see that rows are whole packs (it
    specializes N and strides on divisibility by 16) but every tensor's rows sit at one offset from
    a 16-byte boundary (aligned bases, equal strides): rows split into head, body and tail; else 0."""
    stride = tensors[0].stride(0)
    if stride % 16 == 0 and tensors[0].shape[1] % 16 == 0:
        return 0
    if all(t.data_ptr() % 16 == 0 and t.stride(0) == stride for t in tensors):
        return 16 // tensors[0].element_size()
    return 0


def kernel_for(direction: str, n_cols: int, dtype: torch.dtype, vec: int = 0):
    """(kernel, constexprs, warps, register cap) that compiled_launch (and the sm_90 tests) compile."""
    chunk, warps, maxnreg = _block(n_cols, direction, dtype)  # the same chunk both directions, every dtype
    c = triton.next_power_of_2(triton.cdiv(n_cols, chunk))  # tl.arange(0, C): powers of two
    if direction == "bwd":
        return cluster_bwd_kernel, {"C": c, "CHUNK": chunk, "VEC": vec}, warps, maxnreg
    fp32 = dtype == torch.float32
    constexprs = {"C": c, "CHUNK": chunk, "NEEDS_MASK": n_cols != c * chunk, "COMPENSATED": fp32,
                  "VEC": vec, "HOLD_EXPS": fp32, "THREADS": 32 * warps}  # fmt: skip
    return cluster_fwd_kernel, constexprs, warps, maxnreg


def compiled_launch(direction: str, tensors: list[torch.Tensor]):
    """The kernel of `direction` ("fwd": x, y; "bwd": y, dy, dx) compiled for `tensors`' layout (2-D,
    unit column stride), its launch metadata (num_ctas = C; shared memory for the exchange past
    Triton's own) and the arguments after the data pointers."""
    n, strides = tensors[0].shape[1], tuple(t.stride(0) for t in tensors)
    kernel, constexprs, warps, maxnreg = kernel_for(direction, n, tensors[0].dtype, packs(tensors))
    cap = {} if maxnreg is None else {"maxnreg": maxnreg}
    compiled = kernel.warmup(*tensors, n, *strides, 0, **constexprs, grid=(1,), num_warps=warps,
                             num_stages=1, **cap)  # fmt: skip
    compiled._init_handles()
    slot_base = -(-compiled.metadata.shared // 16) * 16
    packed = (warps, constexprs["C"], slot_base + 8 + 8 * constexprs["C"])  # the mbarrier, C pairs
    return compiled, packed, (n, *strides, slot_base, *constexprs.values())


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


WIDEN_BF16 = tl.constexpr(WIDEN_PAIR["bf16"].format(lo="$0", hi="$1", x="$2"))
WIDEN_FP16 = tl.constexpr(WIDEN_PAIR["f16"].format(lo="$0", hi="$1", x="$2"))
NORMALIZED_BF16 = tl.constexpr(_normalized_asm("bf16"))
NORMALIZED_FP16 = tl.constexpr(_normalized_asm("f16"))


@triton.jit
def _widen(x):
    """x as fp32, a packed pair at a time: not pure, so the compiler may neither merge it with
    another widening of x nor move it ahead of the exchange (the backward holds y, dy packed)."""
    if x.dtype.is_bf16() or x.dtype.is_fp16():
        asm: tl.constexpr = WIDEN_BF16 if x.dtype.is_bf16() else WIDEN_FP16
        return tl.inline_asm_elementwise(asm, "=r,=r,r", [x], dtype=tl.float32, is_pure=False, pack=2)
    else:
        return x


@triton.jit
def _normalized(x, m_row, inv_s):
    if x.dtype.is_bf16() or x.dtype.is_fp16():
        asm: tl.constexpr = NORMALIZED_BF16 if x.dtype.is_bf16() else NORMALIZED_FP16
        return tl.inline_asm_elementwise(
            asm, "=r,r,f,f,f,f", [x, m_row, inv_s], dtype=x.dtype, is_pure=True, pack=2
        )
    else:
        return tl.exp2((x - m_row) * LOG2E) * inv_s


@triton.jit
def _maximum(a, b):
    """max(a, b) in a's dtype (NaN as tl.maximum): one instruction, no widening shared with the sum's."""
    if a.dtype.is_bf16() or a.dtype.is_fp16():
        asm: tl.constexpr = "max.bf16 $0, $1, $2;" if a.dtype.is_bf16() else "max.f16 $0, $1, $2;"
        return tl.inline_asm_elementwise(asm, "=h,h,h", [a, b], dtype=a.dtype, is_pure=True, pack=1)
    else:
        return tl.maximum(a, b)


@triton.jit
def _shift(m):
    """What exponents are taken relative to: the max, or 0 where it is -inf (exp(-inf - -inf) is NaN)."""
    return tl.where(m == float("-inf"), 0.0, m)


@triton.jit
def _pair(m1, s1, m2, s2):
    m = tl.maximum(m1, m2)
    ref = _shift(m)
    return m, s1 * tl.exp2((m1 - ref) * LOG2E) + s2 * tl.exp2((m2 - ref) * LOG2E)


@triton.jit
def _partial(x, THREADS: tl.constexpr):
    """The chunk's partial (m, s) by one reduction of (max, sum) pairs across threads: half the
    block barriers of a max and then a sum. A thread holds R packs of 16 bytes THREADS packs apart
    (Triton's layout of the loads): the reshape to [R, THREADS, PACK] moves nothing and the
    reductions over axes 2 and 0 stay in the thread."""
    PACK: tl.constexpr = 128 // x.dtype.primitive_bitwidth
    x3 = tl.reshape(x, [x.shape[0] // (THREADS * PACK), THREADS, PACK])
    m_t = tl.reduce(tl.reduce(x3, 2, _maximum), 0, _maximum).to(tl.float32)  # [THREADS]
    e = tl.exp2((x3.to(tl.float32) - _shift(m_t)[None, :, None]) * LOG2E)
    return tl.reduce((m_t, tl.sum(tl.sum(e, 2), 0)), 0, _pair)


@triton.jit
def _two_sum(a, a_err, b, b_err):
    """(a + a_err) + (b + b_err) as an fp32 sum and its rounding error (Knuth's TwoSum)."""
    s = a + b
    b_part = s - a
    a_part = s - b_part
    return s, (a - a_part) + (b - b_part) + a_err + b_err


@triton.jit
def _row_sum(v, COMPENSATED: tl.constexpr):
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
def _exchange(m, s, slot_base, rank, C: tl.constexpr):
    """Every block's (m, s) of this row, two [C] tensors in rank order."""
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
    return tl.inline_asm_elementwise(  # slot r of the inbox: the pair at base + 8 + 8 * r
        asm="""{ .reg .u32 a; mov.u32 a, global_smem; add.u32 a, a, $3; mad.lo.u32 a, $2, 8, a;
        ld.shared.v2.f32 {$0, $1}, [a+8]; }""",
        constraints="=f,=f,r,r", args=[tl.arange(0, C), tl.broadcast_to(slot_base + full - 1, [C])],
        dtype=(tl.float32, tl.float32), is_pure=False, pack=1,
    )  # fmt: skip


@triton.jit
def _split_row(row, row_stride, rank, N, C: tl.constexpr, CHUNK: tl.constexpr, VEC: tl.constexpr):
    """A row off 16-byte boundaries (packs()) as its head, up to the first boundary, its body of
    whole packs of VEC elements, which the chunks cover (a block's starts at row * row_stride +
    head + rank * CHUNK), and its tail. Returns the head's length, which of the chunk's lanes are
    in the body, and the head's and tail's columns as 2 * VEC lanes with which of them the last
    block takes, an element at a time (the other blocks none)."""
    head = (VEC - (row * row_stride) % VEC) % VEC
    body = tl.multiple_of((N - head) // VEC * VEC, VEC)
    in_body = rank * CHUNK + tl.arange(0, CHUNK) < body
    lanes = tl.arange(0, 2 * VEC)
    edge_cols = tl.where(lanes < VEC, lanes, head + body + lanes - VEC)
    in_edges = tl.where(lanes < VEC, lanes < head, edge_cols < N)
    return head, in_body, edge_cols, in_edges & (rank == C - 1)


@triton.jit(do_not_specialize=["slot_base"])
def cluster_fwd_kernel(
    x_ptr, y_ptr, N, x_row_stride, y_row_stride, slot_base,
    C: tl.constexpr, CHUNK: tl.constexpr,
    NEEDS_MASK: tl.constexpr,  # the row is not exactly C chunks
    COMPENSATED: tl.constexpr,  # fp32: the sums carry their rounding errors (_row_sum)
    VEC: tl.constexpr,  # > 0: rows off 16-byte boundaries, split into head, body and tail (_split_row)
    HOLD_EXPS: tl.constexpr,  # hold exp(x - m) in fp32 across the exchange, not x
    THREADS: tl.constexpr,  # 32 * the launch's warps (_partial)
):  # fmt: skip
    pid = tl.program_id(0)
    row = (pid // C).to(tl.int64)  # int64: row * stride may pass 2**31
    rank = pid % C  # = %cluster_ctarank: a cluster is C consecutive blocks
    cols = rank * CHUNK + tl.arange(0, CHUNK)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    if VEC > 0:  # the body in whole packs, the head and tail (x_edges) an element at a time
        head, in_body, edge_cols, in_edges = _split_row(row, x_row_stride, rank, N, C, CHUNK, VEC)
        x_body = x_ptr + tl.multiple_of(row * x_row_stride + head + rank * CHUNK, VEC) + tl.arange(0, CHUNK)
        x = tl.load(x_body, mask=in_body, other=float("-inf"))
        x_edges = tl.load(x_row + edge_cols, mask=in_edges, other=float("-inf")).to(tl.float32)
    elif NEEDS_MASK:
        x = tl.load(x_row + cols, mask=cols < N, other=float("-inf"))
    else:
        x = tl.load(x_row + cols)
    # The chunk's partial (m, s); a chunk of all -inf: m = -inf, s = 0. x stays in its dtype.
    if HOLD_EXPS:  # exponentials relative to the chunk's max, held: the max, then their sum
        m = tl.reduce(x, 0, _maximum).to(tl.float32)
        if VEC > 0:
            m = tl.maximum(m, tl.max(x_edges, axis=0))
        e = tl.exp2((x.to(tl.float32) - _shift(m)) * LOG2E)
        s = _row_sum(e, COMPENSATED)
        if VEC > 0:
            s += _row_sum(tl.exp2((x_edges - _shift(m)) * LOG2E), COMPENSATED)
    else:  # 16 bits: taken again after the exchange, so one reduction of pairs
        m, s = _partial(x, THREADS)
        if VEC > 0:
            m_edges = tl.max(x_edges, axis=0)
            m, s = _pair(m, s, m_edges, tl.sum(tl.exp2((x_edges - _shift(m_edges)) * LOG2E), axis=0))
    m_all, s_all = _exchange(m, s, slot_base, rank, C)
    # The row's (M, S): a chunk with m = -inf adds its s unscaled (0, or NaN where it holds a NaN
    # beside nothing but -inf, which must still make the row NaN).
    m_row = tl.max(m_all, axis=0)
    weight = tl.exp2((_shift(m_all) - m_row) * LOG2E)
    s_row = _row_sum(tl.where(m_all == float("-inf"), s_all, s_all * weight), COMPENSATED)
    # A row of all -inf (M = -inf) writes NaN, and a +inf or NaN makes S NaN: torch's results.
    if HOLD_EXPS:  # y = exp(x - m) * (exp(m - M) / S): a chunk of all -inf gives 0 * 0
        y = e * (tl.exp2((m - m_row) * LOG2E) * (1.0 / s_row))
    else:  # y = exp(x - M) / S from the packed x, as in F.softmax
        y = _normalized(x, m_row, 1.0 / s_row)
    if VEC > 0:
        y_body = y_ptr + tl.multiple_of(row * y_row_stride + head + rank * CHUNK, VEC) + tl.arange(0, CHUNK)
        tl.store(y_body, y.to(y_ptr.dtype.element_ty), mask=in_body)
        y_edges = tl.exp2((x_edges - m_row) * LOG2E) * (1.0 / s_row)
        tl.store(y_row + edge_cols, y_edges.to(y_ptr.dtype.element_ty), mask=in_edges)
    elif NEEDS_MASK:
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=cols < N)
    else:
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty))


@triton.jit(do_not_specialize=["slot_base"])
def cluster_bwd_kernel(
    y_ptr, dy_ptr, dx_ptr, N, y_row_stride, dy_row_stride, dx_row_stride, slot_base,
    C: tl.constexpr, CHUNK: tl.constexpr,
    VEC: tl.constexpr,  # > 0: rows off 16-byte boundaries, split into head, body and tail (_split_row)
):  # fmt: skip
    pid = tl.program_id(0)
    row = (pid // C).to(tl.int64)
    rank = pid % C
    if VEC > 0:  # equal row strides (packs): one offset serves y, dy and dx
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
    dx = _widen(y) * (_widen(dy) - tl.sum(d_all, axis=0))
    if VEC > 0:
        tl.store(dx_ptr + body, dx.to(dx_ptr.dtype.element_ty), mask=in_body)
        dx_edges = y_edges * (dy_edges - tl.sum(d_all, axis=0))
        tl.store(dx_ptr + edges, dx_edges.to(dx_ptr.dtype.element_ty), mask=in_edges)
    else:
        tl.store(dx_ptr + row * dx_row_stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=in_row)
