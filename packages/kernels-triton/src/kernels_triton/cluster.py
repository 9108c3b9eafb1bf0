"""Softmax backward over a thread-block cluster, in Triton, the row's exchange in inline PTX.

    dx = y * (dy - sum(y * dy))   along the last dim of (M, N) rows, 32768 <= N <= 131072, sm_90

Why a cluster. The split-row kernels (split_row.py) hold a row in several programs and exchange
each program's partial through global memory: publish, then poll the peers' words, a round
trip through L2 on every row and a spin while a peer is late. On sm_90 a row can instead go to
the C blocks of one thread-block cluster, which the hardware schedules together, and the C
partial dot products travel through distributed shared memory: every block writes its partial
into every block's shared memory (st.shared::cluster), one cluster barrier (arrive.release,
wait.acquire) makes the C writes visible, and each block adds up the C values it holds. No
scratch buffer, no polling, no fallback for a peer that never comes: the blocks of a cluster
run together by construction. Each block reads its chunk of y and dy once and writes its chunk
of dx once, so a row costs 3 accesses per element, the least there is.

How Triton builds it. Triton 3.6 compiles no row reduction with num_ctas > 1, so the kernel is
compiled for one block and launched as a cluster by its own launcher, given num_ctas = C in the
launch metadata: the grid is then M * C blocks, block b is rank b % C of the cluster that takes
row b // C. Triton's reductions use the start of the block's dynamic shared memory
(global_smem); the C exchange slots sit past what Triton allocates (slot_base), and the launch
asks for that much more. Inline PTX is all the exchange needs: mapa (a peer's address of a
shared variable), st.shared::cluster, the cluster barrier, ld.shared.

Where it is used (kernels_triton.launch): the backward at 32768 to 131072 columns on sm_90,
one 8192-element chunk a block over 4 warps, in clusters of C blocks, ceil(N / 8192) rounded up
to a power of two (a block past the row's end reads nothing and adds 0; 16-block clusters are
a non-portable size, which H100 and H200 allow). On an H100 it was faster there than the
split-row and looped kernels, or level, at every row count timed, and slower at 262144 columns,
which it does not take (measurements/2026-11-26-h100/triton-cluster-exchange/ and
triton-cluster-backward/).
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from kernels_triton import compiled_index
from kernels_triton.configs import DTYPES, INTERPRET

CHUNK = 8192  # elements a block holds: 64 of y and dy a thread over 4 warps
NUM_WARPS = 4
MAX_CLUSTER = 16
MIN_COLS = 32768
MAX_COLS = CHUNK * MAX_CLUSTER
# Launches that move fewer bytes (y, dy and dx) stay on the other kernels. Below this a call is
# bound by the host, and a cluster launch costs the host more (cuLaunchKernelEx with cluster
# attributes; for 16-block clusters Triton's launcher also sets the non-portable attribute each
# launch): on an H100 the device time fell there but the call time rose (measurements/
# 2026-11-26-h100/triton-cluster-backward/).
MIN_BYTES = 16 * 1024 * 1024
SLOT_BYTES = 4  # one fp32 partial a block


@triton.jit
def _push(rank_to, value, slot):
    """Write `value` at byte offset `slot` of block `rank_to`'s shared memory in this cluster."""
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
        args=[rank_to, value, slot],
        dtype=tl.int32,
        is_pure=False,
        pack=1,
    )


@triton.jit
def _cluster_barrier(after):
    """Every thread of every block of the cluster arrives (release: its writes to the peers'
    shared memory before it) and waits (acquire). `after`: a value computed from the writes,
    so the barrier comes after them; returns 0, for the reads that must come after it."""
    return tl.inline_asm_elementwise(
        asm="barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;\n\tmov.u32 $0, 0;",
        constraints="=r,r",
        args=[after],
        dtype=tl.int32,
        is_pure=False,
        pack=1,
    )


@triton.jit
def _slot(rank_from, base):
    """This block's slot `rank_from` (at byte offset base + 4 * rank_from of its shared memory)."""
    return tl.inline_asm_elementwise(
        asm="""{
        .reg .u32 a;
        mov.u32 a, global_smem;
        add.u32 a, a, $2;
        mad.lo.u32 a, $1, 4, a;
        ld.shared.f32 $0, [a];
        }""",
        constraints="=f,r,r",
        args=[rank_from, base],
        dtype=tl.float32,
        is_pure=False,
        pack=1,
    )


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
):
    pid = tl.program_id(0)
    row = (pid // C).to(tl.int64)  # int64: row * stride may pass 2**31
    rank = pid % C  # = %cluster_ctarank: a cluster is C consecutive blocks
    cols = rank * CHUNK + tl.arange(0, CHUNK)
    in_row = cols < N
    y = tl.load(y_ptr + row * y_row_stride + cols, mask=in_row, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * dy_row_stride + cols, mask=in_row, other=0.0).to(tl.float32)
    # this block's partial into slot `rank` of every block (each element of `ranks` is held by
    # a few threads of the block, which write the same value: harmless), then the barrier
    ranks = tl.arange(0, C)
    pushed = _push(
        ranks, tl.broadcast_to(tl.sum(y * dy, axis=0), [C]), tl.broadcast_to(slot_base + rank * 4, [C])
    )
    after = _cluster_barrier(tl.sum(pushed, axis=0))
    dot = tl.sum(_slot(ranks, tl.broadcast_to(slot_base + after, [C])), axis=0)
    tl.store(dx_ptr + row * dx_row_stride + cols, (y * (dy - dot)).to(dx_ptr.dtype.element_ty), mask=in_row)


@functools.cache
def _capable(device_index: int) -> bool:
    """Clusters of up to 16 blocks: sm_90 (H100, H200)."""
    return torch.cuda.get_device_capability(device_index)[0] == 9


def applies(n_rows: int, n_cols: int, dtype: torch.dtype, device: torch.device) -> bool:
    """Whether kernels_triton's backward of n_rows rows of n_cols goes to the cluster kernel."""
    return (
        not INTERPRET
        and device.type == "cuda"
        and dtype in DTYPES
        and MIN_COLS <= n_cols <= MAX_COLS
        and 3 * n_rows * n_cols * dtype.itemsize >= MIN_BYTES
        and _capable(device.index if device.index is not None else torch.cuda.current_device())
    )


def compiled_backward(tensors: list[torch.Tensor]):
    """The compiled kernel for y, dy, dx laid out like `tensors` (2-D, unit column stride), and
    what a launch passes after the three data pointers: (packed launch metadata, grid_x, the
    scalar and constexpr arguments). The metadata asks for num_ctas = C, so the launcher makes
    the grid grid_x * C blocks in clusters of C, and for the exchange slots past Triton's own
    shared memory."""
    y = tensors[0]
    m, n = y.shape
    c = triton.next_power_of_2(triton.cdiv(n, CHUNK))  # tl.arange(0, C) takes powers of two only
    strides = tuple(t.stride(0) for t in tensors)
    specialization = ("cluster_bwd", n, strides, y.dtype, tuple(t.data_ptr() % 16 == 0 for t in tensors), c)
    compiled = compiled_index.load_or_compile(
        cluster_bwd_kernel,
        specialization,
        y.device.index,
        lambda: cluster_bwd_kernel.warmup(
            *tensors, n, *strides, 0, C=c, CHUNK=CHUNK, grid=(1,), num_warps=NUM_WARPS, num_stages=1
        ),
    )
    slot_base = -(-compiled.metadata.shared // 16) * 16
    packed = (NUM_WARPS, c, slot_base + c * SLOT_BYTES)
    return compiled, packed, m, (n, *strides, slot_base, c, CHUNK)
