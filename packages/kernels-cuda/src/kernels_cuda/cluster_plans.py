"""Planning v4, long rows over a thread-block cluster (04_softmax_cluster.cu, sm_90), and the
online kernel it falls back to (05_softmax_online.cu). Plain Python over shapes (no GPU).
"""

from __future__ import annotations

import math

from kernels_cuda import arrays
from kernels_cuda.codegen import Spec
from kernels_cuda.launch_types import Device, RowPlan, full_vec

CLUSTER_SIZES = (2, 4, 8, 16)
CLUSTER_THREADS = 256
ONLINE_THREADS, ONLINE_UNROLL = 512, 2
# A held 16-bit chunk's fp32 exponentials take 62 registers a thread at 4 packs: 4 blocks of 256
# threads an SM, where the chunk in shared memory fits 8. Holding it pays only in a launch of at
# most that many blocks an SM (one wave), where a row's whole chain is on the clock
# (experiments/notes/kernels-cuda.md).
HELD_16BIT_BLOCKS_PER_SM = 4


def cluster_spec(
    dtype: str, cluster: int, items: int = 0, threads: int = CLUSTER_THREADS, log: bool = False
) -> Spec:
    """04 with `items` packs a thread held in registers (0: the chunk in shared memory); log: its
    log_softmax epilogue (the chunk in shared memory)."""
    constants = (("CLUSTER", cluster), ("THREADS", threads), ("VEC", full_vec(dtype)), ("ITEMS", items))
    return Spec("04_softmax_cluster.cu", "softmax_cluster", dtype, constants + ((("LOG", 1),) if log else ()))


def cluster_held_packs(dtype: str, cfg) -> int:
    """The most packs a v4 thread holds of a chunk of `dtype` (AutoConfig)."""
    return cfg.cluster_held_packs_f32 if arrays.ITEMSIZE[dtype] == 4 else cfg.cluster_held_packs_16bit


def cluster_items(dtype: str, chunk: int, cfg, blocks_per_sm: float | None) -> int:
    """Packs a v4 thread holds in registers for a chunk of `chunk` elements (a power of two, so
    that few specializations serve every chunk), or 0: the chunk goes through shared memory.
    blocks_per_sm: the launch's blocks over the device's SMs; None for a plan made for every row
    count, where 16-bit chunks stay in shared memory (holding them pays in one wave only, and
    the two forms reduce a row in different orders)."""
    need = math.ceil(chunk / full_vec(dtype) / CLUSTER_THREADS)
    items = 1 << (need - 1).bit_length()
    one_wave = blocks_per_sm is not None and blocks_per_sm <= HELD_16BIT_BLOCKS_PER_SM
    limit = cluster_held_packs(dtype, cfg) if arrays.ITEMSIZE[dtype] == 4 or one_wave else 0
    return items if items <= limit else 0


def cluster_chunks(N: int, vec: int, max_cluster: int) -> list[tuple[int, int]]:
    """(cluster size, chunk) for every cluster size up to max_cluster, smallest first: a chunk is
    the elements one block of the cluster holds, N split evenly, rounded up to whole vec-packs."""
    return [(c, math.ceil(math.ceil(N / c) / vec) * vec) for c in CLUSTER_SIZES if c <= max_cluster]


def cluster_room(device: Device) -> int:
    """Dynamic shared memory a cluster kernel's block may take: the device's opt-in limit less 1 KB
    for the kernels' static shared memory (mbarriers, inboxes, per-warp partials)."""
    return device.max_shared_per_block - 1024


def cluster_split(N: int, dtype: str, vec: int, device: Device, cfg) -> tuple[int, int] | None:
    """(cluster size, chunk elements per block) for a row of N, or None if no cluster holds it."""
    size = arrays.ITEMSIZE[dtype]
    chunks = cluster_chunks(N, vec, min(cfg.max_cluster, device.max_cluster))
    fitting = [(c, k) for c, k in chunks if k * size <= cluster_room(device)]
    if not fitting:
        return None
    # the smallest cluster with chunks small enough to share an SM, else the largest whose chunks fit
    limit = cfg.long_row_chunk_bytes if N * size >= cfg.long_row_bytes else cfg.cluster_chunk_bytes
    return next(((c, k) for c, k in fitting if k * size <= limit), fitting[-1])


def plan_cluster(
    N: int,
    dtype: str,
    vec: int,
    device: Device,
    cfg,
    same_offsets: bool = False,
    M: int | None = None,
    log: bool = False,
) -> RowPlan | None:
    """None without clusters, past the largest cluster's shared memory, or for rows that are not
    whole 16-byte packs unless x's and y's rows share their offsets (`offsets_match`): the kernel
    moves each row's 16-byte-aligned body in bulk and the few elements around it one at a time,
    and one split of a row must suit both the read and the write. That split follows the row's
    own address, so a row's bits depend on (N, dtype) and its address modulo 16 bytes, never on
    M or the other rows (as torch's softmax, whose reduction shifts by the input's address); a
    plan for every row count (M None) takes such rows too. log: log_softmax's epilogue, which
    keeps x: the chunk in shared memory."""
    whole = vec == full_vec(dtype)
    if device.cc < 90 or not (whole or same_offsets):
        return None
    split = cluster_split(N, dtype, full_vec(dtype), device, cfg)
    if split is None:
        return None
    c, chunk = split
    blocks_per_sm = None if M is None else c * M / device.sms
    items = 0 if log else cluster_items(dtype, chunk, cfg, blocks_per_sm)
    return RowPlan(
        cluster_spec(dtype, c, items, log=log),
        block=CLUSTER_THREADS,
        shared_mem=0 if items else chunk * arrays.ITEMSIZE[dtype],
        extra=(chunk,),
        group=c,
    )


def online_spec(dtype: str, vec: int) -> Spec:
    return Spec(
        "05_softmax_online.cu",
        "softmax_online",
        dtype,
        (("THREADS", ONLINE_THREADS), ("VEC", vec), ("UNROLL", ONLINE_UNROLL)),
    )


def plan_online(dtype: str, vec: int) -> RowPlan:
    return RowPlan(online_spec(dtype, vec), block=ONLINE_THREADS)
