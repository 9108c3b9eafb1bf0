"""The row-per-block kernels of cuda/09_cross_entropy.cu and cuda/10_log_softmax.cu: how a row is
split among a block's threads, every specialization they compile to, and their launch. No torch:
the offline compile (`python -m kernels_cuda.codegen --offline`) lists them without it; the ops
are in log_softmax_op.py and cross_entropy_op.py.

A row's configuration (threads, pack width, loads in flight) comes from (N, dtype) alone, so a
row's result is the same bits whatever batch it is in (rows.cuh says why): `row_config` for 10's
rows (a block a row), `xent_config` for 09's (a group of threads a row, several rows a block for
short rows, 16-byte packs from each row's first 16-byte boundary, so 09's bits also depend on the
row's address mod 16). Where the row is kept between the kernels' two passes (shared memory, as
much as fits) changes no arithmetic. `xent_cluster`: the forward of 09's long rows over a
thread-block cluster instead (cuda/11_cross_entropy_cluster.cu, sm_90), also from (N, dtype).
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass
from functools import cache

from kernels_cuda import arrays, codegen, device_props
from kernels_cuda.codegen import Spec

LOG_SOFTMAX_SOURCE = "10_log_softmax.cu"
CROSS_ENTROPY_SOURCE = "09_cross_entropy.cu"
CROSS_ENTROPY_CLUSTER_SOURCE = "11_cross_entropy_cluster.cu"
DTYPES = ("float32", "float16", "bfloat16", "float64")
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}
PACK_BYTES = 16
MAX_GRID = 2**31 - 1
MAX_N = 2**31 - 2**20  # kernels index within a row with 32-bit ints
# Threads a block (one row) by the row's packs: the first entry whose bound holds the row, about
# four packs a thread; fp64 stops at F64_MAX_THREADS, past which its doubled registers spill.
THREADS_BY_PACKS = ((128, 32), (512, 128), (2048, 512), (math.inf, 1024))
F64_MAX_THREADS = 256
# Loads in flight a thread: 16-byte packs, or single elements (rows whose length no pack divides),
# 32 bytes of them (eight fp64 elements made ptxas spill)
UNROLL_PACKS, UNROLL_ELEMENT_BYTES = 4, 32
# Shared memory left out of the staged copy of a row: the kernels' static reduction scratch
STAGE_RESERVE = 2048
# The most shared memory a block stages a row in (None: all the device allows a block). A row past
# it is read again in part; less shared memory a block lets more blocks share an SM. A knob for
# measuring (set it with set_stage_limit); the default keeps every row that fits on chip.
STAGE_LIMIT: int | None = None


@dataclass(frozen=True)
class RowConfig:
    """How a row of N elements is split among a block's threads (rows.cuh): from (N, dtype) only."""

    vec: int
    threads: int
    unroll: int

    def constants(self) -> tuple[tuple[str, int], ...]:
        return (("THREADS", self.threads), ("VEC", self.vec), ("UNROLL", self.unroll))


def row_config(N: int, dtype: str) -> RowConfig:
    full = PACK_BYTES // ITEMSIZE[dtype]
    vec = full if N % full == 0 else 1
    packs = N // vec
    threads = next(t for bound, t in THREADS_BY_PACKS if packs <= bound)
    if dtype == "float64":
        threads = min(threads, F64_MAX_THREADS)
    return RowConfig(vec, threads, unroll(vec, dtype))


def unroll(vec: int, dtype: str) -> int:
    return UNROLL_PACKS if vec > 1 else max(4, UNROLL_ELEMENT_BYTES // ITEMSIZE[dtype])


def every_row_config(dtype: str) -> list[RowConfig]:
    """Every RowConfig `row_config` can give for dtype (for the offline compile)."""
    cap = F64_MAX_THREADS if dtype == "float64" else math.inf
    return list(
        dict.fromkeys(
            RowConfig(vec, min(t, cap), unroll(vec, dtype))
            for vec in (PACK_BYTES // ITEMSIZE[dtype], 1)
            for _, t in THREADS_BY_PACKS
        )
    )


def set_stage_limit(nbytes: int | None) -> None:
    global STAGE_LIMIT
    if nbytes is not None and nbytes < 0:
        raise ValueError(f"set_stage_limit: nbytes must be at least 0 or None, got {nbytes}")
    STAGE_LIMIT = nbytes


def stage_room(device_id: int) -> int:
    """Shared memory a block may stage a row in on this device (STAGE_LIMIT's cap included)."""
    room = max_shared(device_id)
    return room if STAGE_LIMIT is None else min(room, STAGE_LIMIT + STAGE_RESERVE)


def staged_packs(N: int, dtype: str, cfg: RowConfig, max_shared: int) -> int:
    """Packs of a row its block keeps in shared memory between the two passes: all of them where
    they fit, else as many as fit (the rest is read again, from L2 as the row was just read).
    Where the row is kept changes no arithmetic."""
    pack_bytes = cfg.vec * ITEMSIZE[dtype]
    return max(0, min(N // cfg.vec, (max_shared - STAGE_RESERVE) // pack_bytes))


def log_softmax_spec(kernel: str, dtype: str, cfg: RowConfig) -> Spec:
    return Spec(LOG_SOFTMAX_SOURCE, kernel, dtype, cfg.constants())


# --- the cross-entropy's rows (09): a group of threads a row, packs from the row's 16-byte boundary


@dataclass(frozen=True)
class XentConfig:
    """How 09 splits a row of N elements (from (N, dtype) only): tpr threads a row, rpb rows a
    block, items 16-byte packs of vec elements a thread a step; steps: whether rows may be longer
    than one step (then a block a row, kept in shared memory), else the row sits in registers."""

    tpr: int
    rpb: int
    items: int
    vec: int
    steps: bool

    @property
    def threads(self) -> int:
        return self.tpr * self.rpb

    def capacity(self) -> int:
        """Packs a row's threads hold in one step (the row's whole body unless `steps`)."""
        return self.tpr * self.items

    def constants(self) -> tuple[tuple[str, int], ...]:
        return (("TPR", self.tpr), ("RPB", self.rpb), ("ITEMS", self.items), ("VEC", self.vec),
                ("STEPS", int(self.steps)))  # fmt: skip


# Rows in registers: the first (threads a row, packs a thread) of XENT_LADDER that holds the row's
# packs, rows sharing blocks of XENT_BLOCK_THREADS (XENT_WIDE_BLOCK_THREADS for rows wider than a
# warp) where they need fewer: part of a warp for tiny rows, a warp of up to 8 packs a lane (many
# rows an SM in flight, no barrier), then more warps. Every lane computes its ITEMS packs, in the
# row or not, so the ladder's steps are close (600 columns: 75 bf16 packs on 16 lanes x 5, 150 fp32
# packs on 32 x 5), and small blocks keep the SM's row groups many. Longer rows: a block of
# XENT_STEPS[0] threads a row (XENT_F64_TPR for fp64, whose registers are doubled), XENT_STEP_ITEMS
# packs a step, kept in shared memory. (A row held in the registers of 512 threads takes over 64
# registers a thread: one block an SM, whose reads, reduction and writes then take turns; in shared
# memory two blocks share an SM.) Rows of up to XENT_TWO_BLOCKS_BYTES, two of which fit in an SM's
# shared memory, get 512 threads; longer ones, one block an SM whatever its width, 1024, for twice
# the loads in flight.
XENT_LADDER = ((8, 2), (8, 4), (16, 5), (32, 4), (32, 5), (32, 8), (64, 8), (128, 8), (256, 8))
XENT_BLOCK_THREADS, XENT_WIDE_BLOCK_THREADS = 64, 128
XENT_TWO_BLOCKS_BYTES = 112 * 1024
XENT_STEP_ITEMS, XENT_F64_TPR = 4, 256


def xent_config(N: int, dtype: str) -> XentConfig:
    size = ITEMSIZE[dtype]
    vec = PACK_BYTES // size
    packs = N // vec  # the body's packs at most (fewer where the row has a head)
    for tpr, items in XENT_LADDER:
        if tpr * items >= packs:
            block = XENT_BLOCK_THREADS if tpr <= 32 else XENT_WIDE_BLOCK_THREADS
            return XentConfig(tpr, max(1, block // tpr), items, vec, False)
    if dtype == "float64":
        tpr = XENT_F64_TPR
    else:
        tpr = 512 if N * size <= XENT_TWO_BLOCKS_BYTES else 1024
    return XentConfig(tpr, 1, XENT_STEP_ITEMS, vec, True)


def every_xent_config(dtype: str) -> list[XentConfig]:
    """Every XentConfig `xent_config` can give for dtype (for the offline compile)."""
    vec = PACK_BYTES // ITEMSIZE[dtype]
    ladder = [tpr * items * vec for tpr, items in XENT_LADDER]
    ladder += [XENT_TWO_BLOCKS_BYTES // ITEMSIZE[dtype], MAX_N]
    return list(dict.fromkeys(xent_config(n, dtype) for n in ladder))


def xent_staged_packs(N: int, dtype: str, cfg: XentConfig, max_shared: int) -> int:
    """Packs of a row in steps its block keeps in shared memory between the two passes: all of
    them where they fit, else as many as fit (the rest is read again, from L2). Where the row is
    kept changes no arithmetic."""
    if not cfg.steps:
        return 0
    return max(0, min(N // cfg.vec, (max_shared - STAGE_RESERVE) // PACK_BYTES))


def cross_entropy_spec(kernel: str, dtype: str, cfg: XentConfig, entropy: bool = False) -> Spec:
    return Spec(CROSS_ENTROPY_SOURCE, kernel, dtype, cfg.constants() + (("ENTROPY", int(entropy)),))


# --- the cross-entropy's long rows over a cluster (11, sm_90) ------------------------------------


@dataclass(frozen=True)
class XentCluster:
    """11's split of a row of N (from (N, dtype) only): `cluster` blocks of XENT_CLUSTER_THREADS
    threads, block b holding packs [b chunk, (b + 1) chunk) of the row's body in registers,
    `items` packs a thread."""

    cluster: int
    chunk: int
    items: int
    vec: int

    def spec(self, dtype: str) -> Spec:
        constants = (("CLUSTER", self.cluster), ("THREADS", XENT_CLUSTER_THREADS), ("VEC", self.vec),
                     ("ITEMS", self.items))  # fmt: skip
        return Spec(CROSS_ENTROPY_CLUSTER_SOURCE, "cross_entropy_cluster_forward", dtype, constants)


# The forward of a row 09 takes in steps (a block a row, kept in shared memory) goes over a cluster,
# the first split of XENT_CLUSTER_SPLITS (blocks, 16-byte packs a thread at most) whose blocks hold
# it, without label smoothing or entropy (09's alone), on a device with clusters. Eight packs a
# thread are 32 KB a block in 32 registers a thread, so that four blocks share an SM. A row past 8
# blocks of 8 stays on 8 blocks up to 11 packs a thread (three or four blocks an SM) before it goes
# to 16 blocks of 5 to 7 (four or five an SM): the bytes in flight an SM, not the blocks, keep the
# loads ahead, and 16 blocks of so few packs have fewer. 16 blocks (a non-portable size, which H100 and H200
# allow) of 8 hold 131072 fp32 or 262144 16-bit elements; a longer row takes up to twice the packs
# a thread rather than 09's second read. A thread holds the fewest packs of XENT_CLUSTER_ITEMS
# that its chunk needs, not the split's most: a chunk that half fills the most (a row just past a
# split's reach) leaves registers for more blocks an SM. A device that refused 16 blocks
# (device_props.refused) keeps the splits of 8 at most: a row past 8 blocks of 11 takes 09 there.
# The ladder leaves out 6 (ptxas gives it more registers than 7) and 12 to 15 (a spill in 16-bit,
# or no more blocks an SM than 16); the offline test holds spills and registers rising with ITEMS.
XENT_CLUSTER_SPLITS = ((2, 8), (4, 8), (8, 8), (8, 11), (16, 8), (16, 16))
XENT_CLUSTER_ITEMS = (5, 7, 8, 9, 10, 11, 16)
XENT_CLUSTER_THREADS = 256


def xent_cluster(
    N: int,
    dtype: str,
    smoothing: float = 0.0,
    entropy: bool = False,
    device_id: int | None = None,
) -> XentCluster | None:
    """11's split for the forward of rows of N, or None where 09 takes them: on device_id the splits
    of at most `device_props.max_cluster(device_id)` blocks (8 once it refused more), so that a row
    past 8 blocks of 11 packs a thread takes 09 there. device_id None: any device with clusters, up
    to 16 blocks (the offline listing)."""
    if dtype == "float64" or smoothing or entropy or not xent_config(N, dtype).steps:
        return None
    max_cluster = 16 if device_id is None else device_props.max_cluster(device_id)
    vec = PACK_BYTES // ITEMSIZE[dtype]
    packs = N // vec  # the body's packs at most (fewer where the row has a head)
    for c, most in XENT_CLUSTER_SPLITS:
        if c > max_cluster:
            break
        chunk = -(-packs // c)
        if chunk <= most * XENT_CLUSTER_THREADS:
            if device_id is not None and codegen.arch_cc(codegen.device_arch(device_id)) < 90:
                return None
            items = next(i for i in XENT_CLUSTER_ITEMS if i * XENT_CLUSTER_THREADS >= chunk)
            return XentCluster(c, chunk, items, vec)
    return None


def every_xent_cluster_spec(dtype: str) -> list[Spec]:
    """Every Spec `xent_cluster` can give for dtype (for the offline compile): each split at every
    packs a thread its chunks can need (the rows where that count changes)."""
    if dtype == "float64":
        return []
    vec, threads = PACK_BYTES // ITEMSIZE[dtype], XENT_CLUSTER_THREADS
    rows = [c * items * threads * vec for c, most in XENT_CLUSTER_SPLITS for items in range(1, most + 1)]
    ns = [n + d for n in rows for d in (0, vec)]  # (the last row of each count, the first of the next)
    return list(dict.fromkeys(p.spec(dtype) for n in ns if (p := xent_cluster(n, dtype)) is not None))


def scale_config(dtype: str) -> XentConfig:
    """cross_entropy_scale's launch: a grid-stride multiply over the gradient in blocks of 256
    threads (its other constants unused), SCALE_BLOCKS_PER_SM blocks an SM. cross_entropy_count
    and cross_entropy_reduce come from the same build, REDUCE_PARTS blocks of REDUCE_THREADS
    (their own launch bounds), block p on the p-th chunk of cdiv(M, REDUCE_PARTS) rows."""
    return XentConfig(256, 1, 1, PACK_BYTES // ITEMSIZE[dtype], False)


SCALE_BLOCKS_PER_SM = 4
# 09's PARTS (11's too: the chunk counts the mean's scale sums) and RT: the count and the reduce
# launch exactly REDUCE_PARTS blocks (each takes a chunk and a ticket), whatever M
REDUCE_PARTS = 64
REDUCE_THREADS = 256
SCALAR_KERNELS = ("cross_entropy_scale", "cross_entropy_count", "cross_entropy_reduce")


@codegen.register_specializations
def specializations() -> list[Spec]:
    """Every Spec the two ops can launch, for the offline compile."""
    out = []
    for dtype in DTYPES:
        for cfg in every_row_config(dtype):
            out += [log_softmax_spec(k, dtype, cfg) for k in ("log_softmax_forward", "log_softmax_backward")]
        for xcfg in every_xent_config(dtype):
            out += [cross_entropy_spec("cross_entropy_forward", dtype, xcfg, e) for e in (False, True)]
            out.append(cross_entropy_spec("cross_entropy_backward", dtype, xcfg))
        out += [cross_entropy_spec(k, dtype, scale_config(dtype)) for k in SCALAR_KERNELS]
        out += every_xent_cluster_spec(dtype)
    return out


# --- launching ----------------------------------------------------------------------------

_launches: dict[tuple, object] = {}
MAX_CACHED_LAUNCHES = 4096


@cache
def sms(device_id: int) -> int:
    from kernels_cuda import _driver

    return _driver.device_attribute(device_id, _driver.DEV_MULTIPROCESSOR_COUNT)


@cache
def max_shared(device_id: int) -> int:
    from kernels_cuda import _driver

    return _driver.device_attribute(device_id, _driver.DEV_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)


def launch(
    spec_: Spec, device_id: int, grid: int, block: int, shared: int, pointers: tuple[int, ...], scalars: tuple
) -> None:
    """One launch of spec_ on the current torch stream of device_id: `pointers` (addresses, 0 for
    none) then `scalars` ((ctypes type, value) pairs), packed once per distinct scalars."""
    run = packed(spec_, device_id, grid, block, shared, len(pointers), scalars)
    run(arrays.torch_stream_getter()(device_id), *pointers)


def packed(spec_: Spec, device_id: int, grid: int, block: int, shared: int, pointers: int, scalars: tuple):
    """`launch`'s packed launch (`_driver.PackedLaunch`): call it with (stream, *pointers)."""
    key = (spec_, device_id, grid, block, shared, pointers, scalars)
    run = _launches.get(key)
    if run is None:
        if len(_launches) >= MAX_CACHED_LAUNCHES:
            _launches.clear()
        types = [ctypes.c_uint64] * pointers + [t for t, _ in scalars]
        values = [0] * pointers + [v for _, v in scalars]
        run = _launches[key] = codegen.packed(spec_, device_id, grid, block, shared, types, values)
    return run


def acc_ctype(dtype: str):
    return ctypes.c_double if dtype == "float64" else ctypes.c_float
