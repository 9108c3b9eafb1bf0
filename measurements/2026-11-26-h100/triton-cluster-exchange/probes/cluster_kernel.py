# A probe: not part of any package.
"""A Triton softmax forward over a thread-block cluster: one cluster a row, C programs a row, each
holding CHUNK elements; the (max, sum) pairs exchanged through distributed shared memory by
inline PTX, past the shared memory Triton allocates (slot_base, runtime)."""

import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _push(peers, m, s, slot):
    # store (m, s) at byte offset `slot` of peer `peers`'s dynamic shared memory
    return tl.inline_asm_elementwise(
        asm="""{
        .reg .u32 a, r;
        mov.u32 a, global_smem;
        add.u32 a, a, $4;
        mapa.shared::cluster.u32 r, a, $1;
        st.shared::cluster.v2.f32 [r], {$2, $3};
        mov.u32 $0, 0;
        }""",
        constraints="=r,r,f,f,r",
        args=[peers, m, s, slot],
        dtype=tl.int32,
        is_pure=False,
        pack=1,
    )


@triton.jit
def _cluster_sync(dep):
    return tl.inline_asm_elementwise(
        asm="barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;\n\tmov.u32 $0, $1;",
        constraints="=r,r",
        args=[dep],
        dtype=tl.int32,
        is_pure=False,
        pack=1,
    )


@triton.jit
def _read(idx, base):
    return tl.inline_asm_elementwise(
        asm="""{
        .reg .u32 a;
        mov.u32 a, global_smem;
        add.u32 a, a, $3;
        mad.lo.u32 a, $2, 8, a;
        ld.shared.v2.f32 {$0, $1}, [a];
        }""",
        constraints="=f,=f,r,r",
        args=[idx, base],
        dtype=(tl.float32, tl.float32),
        is_pure=False,
        pack=1,
    )


@triton.jit
def cluster_fwd(
    x_ptr, y_ptr, N, x_stride, y_stride, slot_base, C: tl.constexpr, CHUNK: tl.constexpr, RAW: tl.constexpr
):
    pid = tl.program_id(0)
    row = (pid // C).to(tl.int64)
    rank = pid % C
    cols = rank * CHUNK + tl.arange(0, CHUNK)
    mask = cols < N
    raw = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=float("-inf"))
    x = raw.to(tl.float32)
    m = tl.max(x, 0)
    ref = tl.where(m == float("-inf"), 0.0, m)
    e = tl.exp2((x - ref) * LOG2E)
    s = tl.sum(e, 0)
    peers = tl.arange(0, C)
    pushed = _push(
        peers, tl.broadcast_to(m, [C]), tl.broadcast_to(s, [C]), tl.broadcast_to(slot_base + rank * 8, [C])
    )
    synced = _cluster_sync(tl.sum(pushed, 0))
    m_all, s_all = _read(peers, tl.broadcast_to(slot_base + synced, [C]))
    m_row = tl.max(m_all, 0)
    w = tl.where(
        m_all == float("-inf"),
        0.0,
        s_all * tl.exp2((tl.where(m_all == float("-inf"), m_row, m_all) - m_row) * LOG2E),
    )
    s_row = tl.sum(w, 0)
    if RAW:
        # y from the raw chunk (one exponential an element, as F.softmax): only the raw chunk is
        # live across the exchange, not its fp32 exponentials. A row of all -inf gives NaN.
        y = tl.exp2((raw.to(tl.float32) - m_row) * LOG2E) * (1.0 / s_row)
    else:
        scale = tl.where(m == float("-inf"), 0.0, tl.exp2((m - m_row) * LOG2E) / s_row)
        y = e * scale
    tl.store(y_ptr + row * y_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _push1(peers, v, slot):
    # store v at byte offset `slot` of peer `peers`'s dynamic shared memory
    return tl.inline_asm_elementwise(
        asm="""{
        .reg .u32 a, r;
        mov.u32 a, global_smem;
        add.u32 a, a, $3;
        mapa.shared::cluster.u32 r, a, $1;
        st.shared::cluster.f32 [r], $2;
        mov.u32 $0, 0;
        }""",
        constraints="=r,r,f,r",
        args=[peers, v, slot],
        dtype=tl.int32,
        is_pure=False,
        pack=1,
    )


@triton.jit
def _read1(idx, base):
    return tl.inline_asm_elementwise(
        asm="""{
        .reg .u32 a;
        mov.u32 a, global_smem;
        add.u32 a, a, $2;
        mad.lo.u32 a, $1, 4, a;
        ld.shared.f32 $0, [a];
        }""",
        constraints="=f,r,r",
        args=[idx, base],
        dtype=tl.float32,
        is_pure=False,
        pack=1,
    )


@triton.jit
def cluster_bwd(
    y_ptr, dy_ptr, dx_ptr, N, y_stride, dy_stride, dx_stride, slot_base, C: tl.constexpr, CHUNK: tl.constexpr
):
    pid = tl.program_id(0)
    row = (pid // C).to(tl.int64)
    rank = pid % C
    cols = rank * CHUNK + tl.arange(0, CHUNK)
    mask = cols < N
    y = tl.load(y_ptr + row * y_stride + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * dy_stride + cols, mask=mask, other=0.0).to(tl.float32)
    d = tl.sum(y * dy, 0)
    peers = tl.arange(0, C)
    pushed = _push1(peers, tl.broadcast_to(d, [C]), tl.broadcast_to(slot_base + rank * 4, [C]))
    synced = _cluster_sync(tl.sum(pushed, 0))
    dot = tl.sum(_read1(peers, tl.broadcast_to(slot_base + synced, [C])), 0)
    tl.store(dx_ptr + row * dx_stride + cols, (y * (dy - dot)).to(dx_ptr.dtype.element_ty), mask=mask)
