"""Row-wise softmax in CUDA C, v1 naive -> v4 long rows, and the dispatcher that picks one.

    softmax(x, dim=-1, variant="auto", out=None)

x: a CuPy array or torch CUDA tensor, float32 / float16 / bfloat16 (bf16 through torch: CuPy has
none), any shape and strides; the result has x's type, shape and dtype (fp32 accumulation).

The variants, one .cu file each under cuda/ (read them in order):
    v1         01_softmax_naive.cu    one thread per row, three passes from DRAM
    v2         02_softmax_shared.cu   one block per row, shared-memory tree reductions
    v3         03_softmax_fused.cu    row in registers: one read, one write, 16-byte accesses (launches
                                      of few fp32 rows: fewer threads a row, more packs each)
    v4         04_softmax_cluster.cu  long rows over a thread-block cluster (sm_90): asynchronous copies
                                      into shared memory (chunks of a few packs a thread: registers; 16-bit
                                      ones in launches of one wave),
                                      DSMEM exchange; rows that are not whole 16-byte packs too, when x's
                                      and y's rows share their offsets
               05_softmax_online.cu   without clusters, past their capacity, or for rows whose x and y
                                      offsets differ: two-pass online softmax
    v4_online  05_softmax_online.cu   the online path alone, for comparison
    auto       v3 for rows up to AutoConfig.fused_max_row_bytes, else v4 (v3 for a row no cluster
               takes, while it holds the row)

The host path, in the order a call takes it:
    planning   plan(variant, M, N, dtype, vec, device) -> Launch: which kernel, grid, block
    prepare    prepare(shape, strides, dtype, dim, variant, device, ...) -> Prepared: the views,
               copies and the Launch one input layout needs
    running    softmax(): checks, then a `_Call` cached per layout (the Prepared call bound to
               the device's kernel, its arguments packed) does the allocation and one launch
Planning and prepare are plain Python over shapes: every plan can be checked (and every Spec it
can produce compiled) without a GPU.

This file is over 400 lines because planning and the call path of one op belong together: the
call path is the planning's only caller, and each part is short.
"""

from __future__ import annotations

import ctypes
import math
import warnings
from dataclasses import dataclass, replace
from functools import cache, lru_cache

from kernels_cuda import arrays, codegen
from kernels_cuda.codegen import Spec

VARIANTS = ("auto", "v1", "v2", "v3", "v4", "v4_online")
DTYPES = arrays.SUPPORTED_DTYPES
PACK_BYTES = 16  # the widest access a thread can make in one instruction
MAX_GRID = 2**31 - 1
MAX_N = 2**31 - 2**20  # kernels index within a row with 32-bit ints, plus a block-stride of headroom

NAIVE_BLOCK = 256
SHARED_BLOCK = 256
# Threads a v3 block has when a row needs fewer (RPB rows a block), by element size. 16-bit rows
# of a few hundred elements ran faster in 128-thread blocks, fp32 ones in 256-thread blocks
# (experiments/notes/kernels-cuda.md).
FUSED_BLOCK = {4: 256, 2: 128}
# Threads an SM a launch of few fp32 rows aims for (AutoConfig.few_rows_per_sm): one wave of them
# is resident at up to 64 registers a thread. Those launches run in FEW_ROWS_BLOCK-thread blocks.
FEW_ROWS_THREADS_PER_SM = 1024
FEW_ROWS_BLOCK = 128
FUSED_MAX_TPR = 1024
CLUSTER_SIZES = (2, 4, 8, 16)
CLUSTER_THREADS = 256
ONLINE_THREADS, ONLINE_UNROLL = 512, 2


@dataclass(frozen=True)
class AutoConfig:
    """What `variant="auto"` chooses by. Change with `set_auto_config(...)`.

    fused_max_row_bytes: v3 while a row is at most this many bytes (on sm_90; without clusters, or
        for a row no cluster takes, v3 runs up to its capacity). Past it, a row in registers
        leaves too few rows in flight per SM.
    fused_packs_f32, fused_packs_16bit: the 16-byte packs a v3 thread holds before a row gets more
        threads (up to 256 of them; past that, up to 8 packs, then up to 1024 threads).
    cluster_chunk_bytes, long_row_chunk_bytes: v4 picks the smallest cluster whose blocks each
        hold at most cluster_chunk_bytes of a row, or long_row_chunk_bytes for rows of at least
        long_row_bytes; if none does, the largest cluster, if its chunk fits a block's shared
        memory at all.
    max_cluster: the largest cluster v4 uses (16 needs the non-portable cluster attribute, H100).
    cluster_held_packs_f32: v4 holds an fp32 chunk in registers, not shared memory, when each
        thread needs at most this many 16-byte packs of it (0: never).
    cluster_held_packs_16bit: the same for 16-bit chunks, in a launch of one wave of held blocks
        (HELD_16BIT_BLOCKS_PER_SM) only.
    few_rows_per_sm: fp32 v3 launches of at most this many rows an SM give a row fewer threads,
        each holding more packs (`few_rows_shape`): about FEW_ROWS_THREADS_PER_SM threads an SM,
        one wave, where the ladder's threads would run two or more (0: never).

    The defaults are what `python -m kernels_cuda.tune` picked on an H100: v3 holds rows of up
    to 32 KB; rows from 128 KB run fastest in 16 KB chunks (the most blocks an SM, each with all
    its copies in flight), shorter ones in 2-block clusters of up to 64 KB a block. The
    measurements are in experiments/notes/kernels-cuda.md. Held in registers, fp32 chunks of a
    few packs a thread ran faster in launches of few rows and level in long ones; 16-bit chunks,
    whose fp32 exponentials take twice their packs' registers, faster in launches of one wave and
    slower past it.
    """

    fused_max_row_bytes: int = 32 * 1024
    fused_packs_f32: int = 2
    fused_packs_16bit: int = 2
    cluster_chunk_bytes: int = 64 * 1024
    long_row_bytes: int = 128 * 1024
    long_row_chunk_bytes: int = 16 * 1024
    max_cluster: int = 16
    cluster_held_packs_f32: int = 8
    cluster_held_packs_16bit: int = 4
    few_rows_per_sm: int = 64


AUTO = AutoConfig()


def set_auto_config(**changes) -> AutoConfig:
    global AUTO
    AUTO = replace(AUTO, **changes)
    _clear_caches()
    return AUTO


@dataclass(frozen=True)
class Launch:
    """One kernel launch: the spec and its grid; arguments are (x, y, M, N, x_stride, y_stride,
    *extra)."""

    spec: Spec
    grid: int
    block: int
    shared_mem: int = 0
    extra: tuple[int, ...] = ()


@dataclass(frozen=True)
class Device:
    """What a plan needs to know about the GPU."""

    cc: int  # compute capability, e.g. 90
    max_shared_per_block: int  # opt-in dynamic shared memory limit, bytes
    sms: int  # streaming multiprocessors
    max_cluster: int = 16  # largest cluster this device launched (16 -> 8 if it refused 16)


H100 = Device(cc=90, max_shared_per_block=227 * 1024, sms=132)
A100 = Device(cc=80, max_shared_per_block=163 * 1024, sms=108)


# --- planning: shapes -> launches (no GPU) --------------------------------------------------


def full_vec(dtype: str) -> int:
    return PACK_BYTES // arrays.ITEMSIZE[dtype]


def pack_width(dtype: str, n: int, addresses: tuple[int, ...], row_strides: tuple[int, ...]) -> int:
    """16-byte packs when N, every base address and every row stride allow them, else 1 element.

    Rows of 600 fp32 (2400 B) or 600 bf16 (1200 B) are whole 16-byte multiples, so they get
    16-byte packs; an odd N or an offset view falls back to element-wide accesses."""
    vec = full_vec(dtype)
    size = arrays.ITEMSIZE[dtype]
    aligned = (
        n % vec == 0
        and all(a % PACK_BYTES == 0 for a in addresses)
        and all(s * size % PACK_BYTES == 0 for s in row_strides)
    )
    return vec if aligned else 1


def offsets_match(dtype: str, addresses: tuple[int, int], row_strides: tuple[int, int]) -> bool:
    """Whether x's and y's rows (addresses and row strides of the two, in that order) start at the
    same offset from a 16-byte boundary, row for row: then one split of a row into head, 16-byte
    body and tail serves both its read and its write (always so when both are whole packs)."""
    size = arrays.ITEMSIZE[dtype]
    (xa, ya), (xs, ys) = addresses, row_strides
    return (xa - ya) % PACK_BYTES == 0 and (xs - ys) * size % PACK_BYTES == 0


def fused_items_max(vec: int) -> int:
    """Packs per thread v3 holds at most: 8 raw 16-byte packs (32 registers, for every dtype), or
    16 element-wide ones (16 loads in flight already; 32 made ptxas spill a little)."""
    return 8 if vec > 1 else 16


def fused_capacity(vec: int) -> int:
    """The longest row v3 holds: 1024 threads x 8 packs of 16 bytes (32768 fp32, 65536 bf16
    elements), 16384 elements without 16-byte packs."""
    return FUSED_MAX_TPR * fused_items_max(vec) * vec


def fused_packs(dtype: str, vec: int, cfg: AutoConfig) -> int:
    """Packs a v3 thread holds before its row gets more threads (element-wide packs: as many as it can)."""
    if vec == 1:
        return fused_items_max(vec)
    return cfg.fused_packs_f32 if arrays.ITEMSIZE[dtype] == 4 else cfg.fused_packs_16bit


def fused_ladder(vec: int, packs: int) -> list[tuple[int, int]]:
    """v3's (threads per row, packs per thread) configurations, in order of capacity: part of a
    warp for tiny rows; one warp with 1..`packs` packs; more warps, up to 256, with `packs` each;
    256 threads with more packs, up to the maximum; then 512 and 1024 threads with the maximum."""
    items_max = fused_items_max(vec)
    doubling = [1 << k for k in range(items_max.bit_length())]
    sub_warp = [(t, 1) for t in (1, 2, 4, 8, 16)]
    warp = [(32, i) for i in doubling if i <= packs]
    warps = [(t, packs) for t in (64, 128, 256)]
    more_packs = [(256, i) for i in doubling if packs < i <= items_max]
    most = [(t, items_max) for t in (512, 1024)]
    return sub_warp + warp + warps + more_packs + most


def fused_rows_per_block(dtype: str, tpr: int, block: int | None = None) -> int:
    """Rows a block of the row-in-registers kernels (v3, and the fused backward) holds at TPR
    threads a row: `block` (by default FUSED_BLOCK) threads a block where rows need fewer."""
    return max(1, (block or FUSED_BLOCK[arrays.ITEMSIZE[dtype]]) // tpr)


def fused_spec(dtype: str, tpr: int, items: int, vec: int, block: int | None = None, full: int = 0) -> Spec:
    """v3 at `tpr` threads a row of `items` packs each; `full`: how many of a thread's packs lie
    inside every row (no bounds check on those; `full_packs` from N)."""
    rpb = fused_rows_per_block(dtype, tpr, block)
    return Spec(
        "03_softmax_fused.cu",
        "softmax_fused",
        dtype,
        (("TPR", tpr), ("RPB", rpb), ("ITEMS", items), ("VEC", vec)) + ((("FULL", full),) if full else ()),
    )


def few_rows_shape(
    M: int,
    N: int,
    dtype: str,
    vec: int,
    tpr: int,
    items: int,
    items_max: int,
    device: Device | None,
    rows_per_sm: int,
) -> tuple[int, int, int | None]:
    """(threads a row, packs a thread, threads a block or None) for a fused launch the ladder
    gave `tpr` x `items`. An fp32 launch of 16-byte packs and at most `rows_per_sm` rows an SM
    gets about FEW_ROWS_THREADS_PER_SM threads an SM in all (a warp a row at least, and no fewer
    than hold the row at `items_max` packs a thread), in FEW_ROWS_BLOCK-thread blocks. At a wave
    or two of short rows the time is the rows' DRAM round trip plus the instructions each SM
    issues after it: four warps a row issue four times a warp's reductions and run in two waves
    where one warp a row runs in one (experiments/notes/kernels-cuda.md, "Few rows, fewer
    threads"). Any other launch: the ladder's, unchanged."""
    packs = N // vec
    if vec == 1 or arrays.ITEMSIZE[dtype] != 4 or device is None or M > rows_per_sm * device.sms:
        return tpr, items, None
    want = 1 << max(5, (FEW_ROWS_THREADS_PER_SM * device.sms // M).bit_length() - 1)
    fewest = 32
    while fewest * items_max < packs:
        fewest *= 2
    few = min(tpr, max(want, fewest))
    if few == tpr:
        return tpr, items, None
    return few, math.ceil(packs / few), FEW_ROWS_BLOCK


def full_packs(packs: int, tpr: int, items: int) -> int:
    """FULL of a fused launch of `tpr` threads a row, `items` packs a thread, for rows of
    `packs`: how many of each thread's packs lie inside every row, where that is all of them or
    all but the last, else 0 (every pack checked). So a launch shape has at most three compiled
    forms; in the two that know N, the packs inside take no bounds check, -inf padding or
    branch (at the sweep's long rows most of what v3 executed beyond the arithmetic:
    experiments/notes/kernels-cuda.md)."""
    full = packs // tpr
    return full if full >= items - 1 else 0


def plan_fused(M: int, N: int, dtype: str, vec: int, cfg: AutoConfig, device: Device | None = None) -> Launch:
    packs = N // vec
    for tpr, items in fused_ladder(vec, fused_packs(dtype, vec, cfg)):
        if tpr * items >= packs:
            tpr, items, block = few_rows_shape(
                M, N, dtype, vec, tpr, items, fused_items_max(vec), device, cfg.few_rows_per_sm
            )
            full = full_packs(packs, tpr, items) if vec > 1 else 0
            spec = fused_spec(dtype, tpr, items, vec, block, full)
            rpb = dict(spec.constants)["RPB"]
            return Launch(spec, grid=min(math.ceil(M / rpb), MAX_GRID), block=tpr * rpb)
    raise ValueError(
        f"softmax v3 holds rows of at most {fused_capacity(vec)} elements in registers "
        f"({'16-byte' if vec > 1 else 'element-wide'} accesses); N={N} (use v4 or auto)"
    )


def cluster_spec(dtype: str, cluster: int, items: int = 0, threads: int = CLUSTER_THREADS) -> Spec:
    """04 with `items` packs a thread held in registers (0: the chunk in shared memory)."""
    return Spec(
        "04_softmax_cluster.cu",
        "softmax_cluster",
        dtype,
        (("CLUSTER", cluster), ("THREADS", threads), ("VEC", full_vec(dtype)), ("ITEMS", items)),
    )


# A held 16-bit chunk's fp32 exponentials take 62 registers a thread at 4 packs: 4 blocks of 256
# threads an SM, where the chunk in shared memory fits 8. In a launch of at most that many blocks an
# SM (one wave) a row's whole chain is on the clock and holding it was 0.95-0.96 of the time on an
# H100 at 1-32 rows of 131072 bf16; past it, 1.01-1.05 (measurements/2026-11-27-h100/cuda-held-16bit/).
HELD_16BIT_BLOCKS_PER_SM = 4


def cluster_items(dtype: str, chunk: int, cfg: AutoConfig, blocks_per_sm: float) -> int:
    """Packs a v4 thread holds in registers for a chunk of `chunk` elements (a power of two, so
    that few specializations serve every chunk), or 0: the chunk goes through shared memory.
    blocks_per_sm: the launch's blocks over the device's SMs."""
    need = math.ceil(chunk / full_vec(dtype) / CLUSTER_THREADS)
    items = 1 << (need - 1).bit_length()
    one_wave = blocks_per_sm <= HELD_16BIT_BLOCKS_PER_SM
    limit = cluster_held_packs(dtype, cfg) if arrays.ITEMSIZE[dtype] == 4 or one_wave else 0
    return items if items <= limit else 0


def cluster_held_packs(dtype: str, cfg: AutoConfig) -> int:
    """The most packs a v4 thread holds of a chunk of `dtype` (AutoConfig)."""
    return cfg.cluster_held_packs_f32 if arrays.ITEMSIZE[dtype] == 4 else cfg.cluster_held_packs_16bit


def cluster_chunks(N: int, vec: int, max_cluster: int) -> list[tuple[int, int]]:
    """(cluster size, chunk) for every cluster size up to max_cluster, smallest first: a chunk is
    the elements one block of the cluster holds, N split evenly, rounded up to whole vec-packs."""
    return [(c, math.ceil(math.ceil(N / c) / vec) * vec) for c in CLUSTER_SIZES if c <= max_cluster]


def cluster_room(device: Device) -> int:
    """Dynamic shared memory a cluster kernel's block may take: the device's opt-in limit less 1 KB
    for the kernels' static shared memory (mbarriers, inboxes, per-warp partials)."""
    return device.max_shared_per_block - 1024


def cluster_split(N: int, dtype: str, vec: int, device: Device, cfg: AutoConfig) -> tuple[int, int] | None:
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
    M: int, N: int, dtype: str, vec: int, device: Device, cfg: AutoConfig, same_offsets: bool = False
) -> Launch | None:
    """None without clusters, past the largest cluster's shared memory, or for rows that are not
    whole 16-byte packs unless x's and y's rows share their offsets (`offsets_match`): the kernel
    moves each row's 16-byte-aligned body in bulk and the few elements around it one at a time,
    and one split of the row must suit both the read and the write."""
    if device.cc < 90 or not (vec == full_vec(dtype) or same_offsets):
        return None
    split = cluster_split(N, dtype, full_vec(dtype), device, cfg)
    if split is None:
        return None
    c, chunk = split
    grid = c * min(M, MAX_GRID // c)
    items = cluster_items(dtype, chunk, cfg, grid / device.sms)
    return Launch(
        cluster_spec(dtype, c, items),
        grid=grid,
        block=CLUSTER_THREADS,
        shared_mem=0 if items else chunk * arrays.ITEMSIZE[dtype],
        extra=(chunk,),
    )


def online_spec(dtype: str, vec: int) -> Spec:
    return Spec(
        "05_softmax_online.cu",
        "softmax_online",
        dtype,
        (("THREADS", ONLINE_THREADS), ("VEC", vec), ("UNROLL", ONLINE_UNROLL)),
    )


def plan(
    variant: str,
    M: int,
    N: int,
    dtype: str,
    vec: int,
    device: Device,
    cfg: AutoConfig | None = None,
    same_offsets: bool = False,
) -> Launch:
    """The launch for one (M, N) problem; vec from `pack_width`, same_offsets from `offsets_match`
    (it matters only where vec is 1: whole packs always share their offsets)."""
    cfg = cfg or AUTO
    if variant == "v1":
        spec = Spec("01_softmax_naive.cu", "softmax_naive", dtype)
        return Launch(spec, grid=math.ceil(M / NAIVE_BLOCK), block=NAIVE_BLOCK)
    if variant == "v2":
        spec = Spec("02_softmax_shared.cu", "softmax_shared", dtype, (("BLOCK", SHARED_BLOCK),))
        return Launch(spec, grid=min(M, MAX_GRID), block=SHARED_BLOCK)
    if variant == "v3":
        return plan_fused(M, N, dtype, vec, cfg, device)
    if variant == "v4":
        return plan_cluster(M, N, dtype, vec, device, cfg, same_offsets) or plan(
            variant="v4_online", M=M, N=N, dtype=dtype, vec=vec, device=device, cfg=cfg
        )
    if variant == "v4_online":
        return Launch(online_spec(dtype, vec), grid=min(M, MAX_GRID), block=ONLINE_THREADS)
    if variant == "auto":
        fits_v3 = N <= fused_capacity(vec)
        if fits_v3 and (N * arrays.ITEMSIZE[dtype] <= cfg.fused_max_row_bytes or device.cc < 90):
            return plan_fused(M, N, dtype, vec, cfg, device)
        # past fused_max_row_bytes: a cluster, else v3 while it holds the row (one read, where
        # the online kernel reads it twice), else the online kernel
        cluster = plan_cluster(M, N, dtype, vec, device, cfg, same_offsets)
        return cluster or plan("v3" if fits_v3 else "v4_online", M, N, dtype, vec, device, cfg)
    raise ValueError(f"softmax: unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")


def few_rows_specs(dtype: str, vec: int, items_max: int, spec_of) -> list[Spec]:
    """Every launch `few_rows_shape` can lead to: a warp to 256 threads a row, 1 to items_max
    packs, all of them inside the row or all but the last."""
    return [
        spec_of(dtype, tpr, items, vec, FEW_ROWS_BLOCK, full)
        for tpr in (32, 64, 128, 256)
        for items in range(1, items_max + 1)
        for full in (items - 1, items)
    ]


@codegen.register_specializations
def specializations() -> list[Spec]:
    """Every Spec `plan` can produce, for the offline compile."""
    specs = []
    for dtype in DTYPES:
        specs.append(Spec("01_softmax_naive.cu", "softmax_naive", dtype))
        specs.append(Spec("02_softmax_shared.cu", "softmax_shared", dtype, (("BLOCK", SHARED_BLOCK),)))
        for vec in (full_vec(dtype), 1):
            specs.extend(
                fused_spec(dtype, tpr, items, vec, None, full)
                for tpr, items in fused_ladder(vec, fused_packs(dtype, vec, AUTO))
                for full in ((0, items - 1, items) if vec > 1 else (0,))
            )
            if vec > 1 and arrays.ITEMSIZE[dtype] == 4:  # few rows: any packs up to the most
                specs.extend(few_rows_specs(dtype, vec, fused_items_max(vec), fused_spec))
            specs.append(online_spec(dtype, vec))
        held = [0] + [1 << k for k in range(cluster_held_packs(dtype, AUTO).bit_length())]
        specs.extend(cluster_spec(dtype, c, items) for c in CLUSTER_SIZES for items in held)
    return list(dict.fromkeys(specs))  # the few-rows launches repeat some of the ladder's


# --- preparing a call: one input layout -> what its launch needs (no GPU) -------------------


@dataclass(frozen=True)
class Prepared:
    """What a softmax call does for one input layout, decided before any GPU work.

    x is viewed with the softmax dim last (`moved`) as M rows of N. Rows that sit at one stride
    from each other are read in place (`x_row_stride`); otherwise (None) they are first copied to
    a contiguous buffer. Without out=, the result is allocated in `moved_shape` and returned as a
    view in x's dim order. With out=, the kernel writes straight into out's rows when they are
    distinct and collapse to one stride (`out_direct`), else into a temporary copied into out.
    `launch` is None when there is nothing to compute (an empty input).
    """

    dim: int
    moved: bool
    moved_shape: tuple[int, ...]
    M: int
    N: int
    x_row_stride: int | None
    y_row_stride: int  # of the rows the kernel writes: out's, or N for a fresh buffer
    out_direct: bool
    launch: Launch | None


def _moved(values: tuple[int, ...], d: int) -> tuple[int, ...]:
    return values[:d] + values[d + 1 :] + (values[d],)


def prepare(
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    dtype: str,
    dim: int,
    variant: str,
    device: Device,
    *,
    x_address: int = 0,
    out_strides: tuple[int, ...] | None = None,
    out_address: int = 0,
    cfg: AutoConfig | None = None,
) -> Prepared:
    """The `Prepared` call for x of `shape`/`strides` (elements) at byte address `x_address`
    (only its alignment matters), with out= of `out_strides` at `out_address` if given.

    Raises ValueError for a dim out of range, an unknown variant, rows too long for any kernel,
    or rows too long for the variant asked for. A 0-d input is prepared as shape (1,)."""
    fn = "kernels_cuda.softmax"
    if dtype not in DTYPES:
        raise TypeError(f"{fn}: unsupported dtype {dtype}; supported: {', '.join(DTYPES)}")
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise ValueError(f"{fn}: unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    d = arrays.normalize_dim(dim, len(shape), fn)
    if not shape:
        shape, strides, out_strides = (1,), (1,), None if out_strides is None else (1,)
    moved = d != len(shape) - 1
    moved_shape = _moved(tuple(shape), d)
    N, M = moved_shape[-1], math.prod(moved_shape[:-1])
    if N > MAX_N:
        raise ValueError(f"{fn}: rows of {N} elements along dim {dim}; at most {MAX_N} are supported")
    x_rows = arrays.row_stride(moved_shape, _moved(tuple(strides), d))
    x_stride, x_address = (N, 0) if x_rows is None else (x_rows, x_address)  # a copy is aligned
    y_stride, y_address, direct = N, 0, False
    if out_strides is not None:
        out_rows = arrays.row_stride(moved_shape, _moved(tuple(out_strides), d))
        if out_rows is not None and out_rows >= N:  # distinct rows: write straight into them
            y_stride, y_address, direct = out_rows, out_address, True
    launch = None
    if M * N:
        vec = pack_width(dtype, N, (x_address, y_address), (x_stride, y_stride))
        same = offsets_match(dtype, (x_address, y_address), (x_stride, y_stride))
        launch = _plan(variant, M, N, dtype, vec, device, cfg or AUTO, same)
    return Prepared(d, moved, moved_shape, M, N, x_rows, y_stride, direct, launch)


_plan = lru_cache(maxsize=4096)(plan)
_prepare = lru_cache(maxsize=4096)(prepare)


def _clear_caches() -> None:
    _plan.cache_clear()
    _prepare.cache_clear()
    _calls.clear()
    _torch_calls.clear()


# --- running --------------------------------------------------------------------------------

ARG_TYPES = (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int64, ctypes.c_int32, ctypes.c_int64, ctypes.c_int64)


@cache
def _device_props(device_id: int) -> Device:
    from kernels_cuda import _driver

    return Device(
        cc=int(codegen.device_arch(device_id).removeprefix("sm_")),
        max_shared_per_block=_driver.device_attribute(
            device_id, _driver.DEV_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        ),
        sms=_driver.device_attribute(device_id, _driver.DEV_MULTIPROCESSOR_COUNT),
    )


_refused_cluster16: set[int] = set()


def _device(device_id: int) -> Device:
    d = _device_props(device_id)
    return replace(d, max_cluster=8) if device_id in _refused_cluster16 else d


def _packed(launch: Launch, device_id: int, x_stride: int, y_stride: int, M: int, N: int):
    """The launch packed with every argument but the two pointers (x, y, M, N, strides, *extra)."""
    types = ARG_TYPES + (ctypes.c_int32,) * len(launch.extra)
    values = (0, 0, M, N, x_stride, y_stride, *launch.extra)
    return codegen.packed(launch.spec, device_id, launch.grid, launch.block, launch.shared_mem, types, values)


class _Call:
    """A `Prepared` call bound to one device's kernel, its arguments packed: what the per-layout
    caches hold. Calling it does the view, copy, allocation and launch the plan says."""

    __slots__ = ("prepared", "ops", "run", "fresh_rows", "dense_run")

    def __init__(self, prepared: Prepared, ops, device_id: int):
        p = self.prepared = prepared
        self.ops = ops
        x_stride = p.N if p.x_row_stride is None else p.x_row_stride
        self.run = _packed(p.launch, device_id, x_stride, p.y_row_stride, p.M, p.N).two
        self.fresh_rows = not p.moved and p.x_row_stride is not None  # the common case, no views
        # x's rows are back to back (x is dense): an output like x has rows of stride N too, so
        # `softmax` allocates it with empty_like and launches `run` itself (None: not dense).
        self.dense_run = self.run if self.fresh_rows and p.x_row_stride == p.N else None

    def torch(self, x, x_ptr: int, device_index: int):
        """The call for a torch tensor without out=, for what `softmax`'s own dense path leaves."""
        if self.dense_run is not None:
            y = _empty_like(x)
            if arrays._poison:
                y.fill_(math.nan)
            self.run(_current_stream(device_index), x_ptr, y.data_ptr())
            return y
        return self(x, x_ptr)

    def __call__(self, x, x_ptr: int, out=None):
        p, ops = self.prepared, self.ops
        if self.fresh_rows and out is None:
            y = ops.empty(p.moved_shape, x)
            self.run(ops.stream(x), x_ptr, ops.ptr(y))
            return y
        xm = ops.moveaxis(x, p.dim, -1) if p.moved else x
        if p.x_row_stride is None:
            xm = ops.contiguous(xm)
            x_ptr = ops.ptr(xm)
        if out is None:
            y = ops.empty(p.moved_shape, x)
            self.run(ops.stream(x), x_ptr, ops.ptr(y))
            return ops.moveaxis(y, -1, p.dim) if p.moved else y
        out_m = ops.moveaxis(out, p.dim, -1) if p.moved else out
        if p.out_direct:
            self.run(ops.stream(x), x_ptr, ops.ptr(out_m))
        else:
            tmp = ops.empty(p.moved_shape, x)
            self.run(ops.stream(x), x_ptr, ops.ptr(tmp))
            ops.copy_(out_m, tmp)
        return out


_calls: dict[tuple, _Call] = {}  # (Prepared, backend, device) -> _Call
_torch_calls: dict[tuple, _Call] = {}  # a torch call's layout key (`_torch_key`) -> _Call
MAX_CACHED_CALLS = 4096  # past this many layouts, the caches start over


def _torch_key(x, ptr: int, dim: int, variant: str) -> tuple:
    """The layout key `softmax` looks a torch call up by (built inline there, for speed). A
    contiguous tensor's strides follow from its shape wherever they matter (torch ignores those of
    size-1 dims, and so does `arrays.row_stride`), so its key leaves them out: one call fewer. The
    two kinds of key differ in length, so they never meet."""
    if x.is_contiguous():
        return (x.shape, x.dtype, x.get_device(), ptr & 15, dim, variant)
    return (x.shape, x.stride(), x.dtype, x.get_device(), ptr & 15, dim, variant)


# The two torch functions the cached path calls, each bound to its module global on first use:
# importing this module needs no torch, and a global is the cheapest thing to look up per call.


def _empty_like(x):
    global _empty_like
    import torch

    _empty_like = torch.empty_like
    return _empty_like(x)


def _current_stream(device_index: int) -> int:
    global _current_stream
    _current_stream = arrays.torch_stream_getter()
    return _current_stream(device_index)


def softmax(x, dim: int = -1, variant: str = "auto", *, out=None):
    """softmax of x along `dim` on x's device, on the caller's current stream.

    Without `out`, the result is allocated with the softmax dim innermost and returned as a view in
    x's dim order (contiguous when dim is the last one). With `out`, it is written into `out`
    directly when out's layout allows, else through a temporary.

    A torch tensor whose layout (shape, strides, dtype, device, 16-byte alignment) was seen before
    with the same dim and variant goes straight to its cached call: one dictionary lookup, the
    output's allocation and one driver call, all from here when x is dense."""
    if out is None and dim.__class__ is int and variant.__class__ is str:
        try:  # the key as `_torch_key` builds it, inline
            ptr, device_index = x.data_ptr(), x.get_device()
            if x.is_contiguous():
                call = _torch_calls.get((x.shape, x.dtype, device_index, ptr & 15, dim, variant))
            else:
                call = _torch_calls.get((x.shape, x.stride(), x.dtype, device_index, ptr & 15, dim, variant))
        except AttributeError:  # not a torch tensor
            call = None
        if call is not None:
            run = call.dense_run
            if run is None or arrays._poison:
                return call.torch(x, ptr, device_index)
            y = _empty_like(x)
            run(_current_stream(device_index), ptr, y.data_ptr())
            return y
    return _softmax(x, dim, variant, out)


def _softmax(x, dim, variant, out):
    """The checked path: validates everything, then prepares (cached by layout) and runs."""
    fn = "kernels_cuda.softmax"
    ops = arrays.backend(x, fn)
    dtype = arrays.check_dtype(ops, x, fn)
    arrays.normalize_dim(dim, x.ndim, fn)
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise ValueError(f"{fn}: unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    device_id = arrays.check_device(ops, x, fn)
    shape = tuple(x.shape)
    if out is not None:
        _check_out(ops, out, shape, dtype, device_id, fn)
    if x.ndim == 0:  # one element: softmax over a 1-element row
        y = _softmax(ops.reshape(x, (1,)), 0, variant, None if out is None else ops.reshape(out, (1,)))
        return out if out is not None else ops.reshape(y, ())
    x_ptr = ops.ptr(x)
    prepared = _prepare(
        shape,
        ops.strides(x),
        dtype,
        dim,
        variant,
        _device(device_id),
        x_address=x_ptr % 16,
        out_strides=None if out is None else ops.strides(out),
        out_address=0 if out is None else ops.ptr(out) % 16,
    )
    if prepared.launch is None:
        return out if out is not None else ops.empty(shape, x)
    try:
        key = (prepared, ops.kind, device_id)
        call = _calls.get(key)
        if call is None:
            call = _calls[key] = _Call(prepared, ops, device_id)
        result = call(x, x_ptr, out)
    except Exception as exc:  # noqa: BLE001 - a refused 16-block cluster is retried with 8; all else raises
        if prepared.launch.spec.cluster <= 8 or "CLUSTER" not in str(exc).upper():
            raise
        warnings.warn(
            f"device {device_id} refused a 16-block cluster ({exc}); v4 uses clusters of at most 8",
            RuntimeWarning,
            stacklevel=3,
        )
        _refused_cluster16.add(device_id)
        _clear_caches()
        return _softmax(x, dim, variant, out)
    if out is None and ops is arrays._TorchOps and dim.__class__ is int:
        if len(_torch_calls) >= MAX_CACHED_CALLS or len(_calls) >= MAX_CACHED_CALLS:
            _torch_calls.clear()
            _calls.clear()
        _torch_calls[_torch_key(x, x_ptr, dim, variant)] = call
    return result


def _check_out(ops, out, shape, dtype, device_id, fn) -> None:
    if arrays.backend(out, fn) is not ops:
        raise TypeError(f"{fn}: out must be the same kind of array as x ({ops.kind})")
    if tuple(out.shape) != shape or ops.dtype(out) != dtype:
        raise ValueError(
            f"{fn}: out has shape {tuple(out.shape)} and dtype {ops.dtype(out)}; expected {shape} and {dtype}"
        )
    if arrays.check_device(ops, out, fn) != device_id:
        raise ValueError(f"{fn}: out is on device {ops.device_id(out)}, x on device {device_id}")


def run_launch(launch: Launch, x: arrays.Rows, y: arrays.Rows, device_id: int, stream) -> None:
    """One planned launch over rows x -> y (same M and N; the plan's pack width must suit both),
    on `stream` (a CUstream handle or a CuPy / torch stream). For tuning and tests: unpacked."""
    _packed(launch, device_id, x.row_stride, y.row_stride, x.M, x.N)(
        codegen.stream_handle(stream), x.ptr, y.ptr
    )
