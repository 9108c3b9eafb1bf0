"""Row-wise softmax in CUDA C, v1 naive -> v4 long rows, and the dispatcher that picks one.

    softmax(x, dim=-1, variant="auto", out=None)

x: a CuPy array or torch CUDA tensor, float32 / float16 / bfloat16 (bf16 through torch: CuPy has
none), any shape and strides; the result has x's type, shape and dtype (fp32 accumulation).

The variants, one .cu file each under cuda/ (read them in order):
    v1         01_softmax_naive.cu    one thread per row, three passes from DRAM
    v2         02_softmax_shared.cu   one block per row, shared-memory tree reductions
    v3         03_softmax_fused.cu    row in registers: one read, one write, 16-byte accesses
    v4         04_softmax_cluster.cu  long rows over a thread-block cluster (sm_90): bulk copies into
                                      shared memory, DSMEM exchange;
               05_softmax_online.cu   without clusters, past their capacity, or for rows that are not
                                      whole 16-byte packs: two-pass online softmax
    v4_online  05_softmax_online.cu   the online path alone, for comparison
    v4_split   06_softmax_split.cu    few long rows (sm_90): a row over independent blocks that
                                      exchange (max, sum) through global memory
    auto       v3 for rows up to AutoConfig.fused_max_row_bytes, else v4_split for few long rows
               (AutoConfig.split_*), else v4

Every function from here to `specializations()` is plain Python over shapes: the launch plans
can be checked (and every Spec they can produce compiled) without a GPU.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from functools import cache, lru_cache

from kernels_cuda import arrays, codegen
from kernels_cuda.codegen import Spec

VARIANTS = ("auto", "v1", "v2", "v3", "v4", "v4_online", "v4_split")
DTYPES = arrays.SUPPORTED_DTYPES
PACK_BYTES = 16  # the widest access a thread can make in one instruction
MAX_GRID = 2**31 - 1
MAX_N = 2**31 - 2**20  # kernels index within a row with 32-bit ints, plus a block-stride of headroom

NAIVE_BLOCK = 256
SHARED_BLOCK = 256
FUSED_BLOCK = 256  # threads per block for rows shorter than a block (RPB rows per block)
FUSED_MAX_TPR = 1024
CLUSTER_SIZES = (2, 4, 8, 16)
CLUSTER_THREADS = 256
ONLINE_THREADS, ONLINE_UNROLL = 512, 2
SPLIT_THREADS = 256
SPLIT_MAX_BLOCKS_PER_ROW = 64  # the split kernel needs more blocks than this resident at once


@dataclass(frozen=True)
class AutoConfig:
    """What `variant="auto"` chooses by. Change with `set_auto_config(...)`.

    fused_max_row_bytes: v3 while a row is at most this many bytes (on sm_90; without clusters v3
        runs up to its capacity). Past it, a row in registers leaves too few rows in flight per SM.
    fused_packs_f32, fused_packs_16bit: the 16-byte packs a v3 thread holds before a row gets more
        threads (up to 256 of them; past that, up to 8 packs, then up to 1024 threads).
    cluster_chunk_bytes: v4 picks the smallest cluster whose blocks each hold at most this much of
        a row; if none does, the largest cluster, if its chunk fits a block's shared memory at all.
    max_cluster: the largest cluster v4 uses (16 needs the non-portable cluster attribute, H100).
    split_max_rows, split_min_row_bytes: auto sends rows of at least split_min_row_bytes to
        v4_split when there are at most split_max_rows of them (few long rows need large clusters,
        which leave SMs short of room; many rows keep every SM busy with clusters anyway).
    split_chunk_bytes: v4_split's chunk per block (more blocks per row when a row is longer).

    The defaults are the H100 measurements of `python -m kernels_cuda.tune` (NOTES.md, round 2):
    v3 beat the cluster kernel up to 64 KB rows in bf16 (97% vs 94.5% of copy at 32768) and
    lost to it at 128 KB rows in fp32 (97.4% vs 98.5%); 64 KB chunks beat 32 KB ones on every long
    row (fewer blocks per cluster: C = 16 clusters leave SMs idle, 21 fit on an H100 at 3 blocks an
    SM); fp32 rows of 600 ran 1.3-1.6% faster with 2 packs a thread than with 5, bf16 ones best with 3-4.
    """

    fused_max_row_bytes: int = 64 * 1024
    fused_packs_f32: int = 2
    fused_packs_16bit: int = 4
    cluster_chunk_bytes: int = 64 * 1024
    max_cluster: int = 16
    split_max_rows: int = 0  # off: the cluster kernel was faster at 256 rows (notes, 2026-11-25)
    split_min_row_bytes: int = 256 * 1024
    split_chunk_bytes: int = 32 * 1024


AUTO = AutoConfig()


def set_auto_config(**changes) -> AutoConfig:
    global AUTO
    AUTO = replace(AUTO, **changes)
    _plan.cache_clear()
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
    workspace_bytes: int = 0  # zeroed device memory kept between launches, passed after `extra`


@dataclass(frozen=True)
class Device:
    """What a plan needs to know about the GPU."""

    cc: int  # compute capability, e.g. 90
    max_shared_per_block: int  # opt-in dynamic shared memory limit, bytes
    max_cluster: int = 16  # largest cluster this device launched (16 -> 8 if it refused 16)


H100 = Device(cc=90, max_shared_per_block=227 * 1024)
A100 = Device(cc=80, max_shared_per_block=163 * 1024)


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


def fused_spec(dtype: str, tpr: int, items: int, vec: int) -> Spec:
    rpb = max(1, FUSED_BLOCK // tpr)
    return Spec(
        "03_softmax_fused.cu",
        "softmax_fused",
        dtype,
        (("TPR", tpr), ("RPB", rpb), ("ITEMS", items), ("VEC", vec)),
    )


def plan_fused(M: int, N: int, dtype: str, vec: int, cfg: AutoConfig) -> Launch:
    packs = N // vec
    for tpr, items in fused_ladder(vec, fused_packs(dtype, vec, cfg)):
        if tpr * items >= packs:
            spec = fused_spec(dtype, tpr, items, vec)
            rpb = dict(spec.constants)["RPB"]
            return Launch(spec, grid=min(math.ceil(M / rpb), MAX_GRID), block=tpr * rpb)
    raise ValueError(
        f"softmax v3 holds rows of at most {fused_capacity(vec)} elements in registers "
        f"({'16-byte' if vec > 1 else 'element-wide'} accesses); N={N} (use v4 or auto)"
    )


def cluster_spec(dtype: str, cluster: int) -> Spec:
    return Spec(
        "04_softmax_cluster.cu",
        "softmax_cluster",
        dtype,
        (("CLUSTER", cluster), ("THREADS", CLUSTER_THREADS), ("VEC", full_vec(dtype))),
    )


def cluster_split(N: int, dtype: str, vec: int, device: Device, cfg: AutoConfig) -> tuple[int, int] | None:
    """(cluster size, chunk elements per block) for a row of N, or None if no cluster holds it."""
    size = arrays.ITEMSIZE[dtype]
    sizes = [c for c in CLUSTER_SIZES if c <= min(cfg.max_cluster, device.max_cluster)]
    chunks = [(c, math.ceil(math.ceil(N / c) / vec) * vec) for c in sizes]
    for c, chunk in chunks:  # the smallest cluster with chunks small enough to share an SM
        if chunk * size <= cfg.cluster_chunk_bytes:
            return c, chunk
    c, chunk = chunks[-1]  # else the largest cluster, if its chunks fit a block (1 KB: static smem)
    return (c, chunk) if chunk * size <= device.max_shared_per_block - 1024 else None


def plan_cluster(M: int, N: int, dtype: str, vec: int, device: Device, cfg: AutoConfig) -> Launch | None:
    """None without clusters, for rows that are not whole 16-byte packs (the bulk copy moves those
    only), or past the largest cluster's shared memory."""
    if device.cc < 90 or vec != full_vec(dtype):
        return None
    split = cluster_split(N, dtype, vec, device, cfg)
    if split is None:
        return None
    c, chunk = split
    return Launch(
        cluster_spec(dtype, c),
        grid=c * min(M, MAX_GRID // c),
        block=CLUSTER_THREADS,
        shared_mem=chunk * arrays.ITEMSIZE[dtype],
        extra=(chunk,),
    )


def online_spec(dtype: str, vec: int) -> Spec:
    return Spec(
        "05_softmax_online.cu",
        "softmax_online",
        dtype,
        (("THREADS", ONLINE_THREADS), ("VEC", vec), ("UNROLL", ONLINE_UNROLL)),
    )


def split_spec(dtype: str) -> Spec:
    return Spec(
        "06_softmax_split.cu", "softmax_split", dtype, (("THREADS", SPLIT_THREADS), ("VEC", full_vec(dtype)))
    )


def plan_split(M: int, N: int, dtype: str, vec: int, device: Device, cfg: AutoConfig) -> Launch | None:
    """None without sm_90 (bulk copies), for rows that are not whole 16-byte packs, or when a row
    needs more than SPLIT_MAX_BLOCKS_PER_ROW blocks of the largest chunk a block holds."""
    if device.cc < 90 or vec != full_vec(dtype):
        return None
    size = arrays.ITEMSIZE[dtype]
    split = math.ceil(N * size / cfg.split_chunk_bytes)
    if split > SPLIT_MAX_BLOCKS_PER_ROW:
        split = SPLIT_MAX_BLOCKS_PER_ROW
    chunk = math.ceil(math.ceil(N / split) / vec) * vec
    split = math.ceil(N / chunk)
    if chunk * size > device.max_shared_per_block - 1024 or M * split > MAX_GRID:
        return None
    return Launch(
        split_spec(dtype),
        grid=M * split,
        block=SPLIT_THREADS,
        shared_mem=chunk * size,
        extra=(chunk, split),
        workspace_bytes=4 * (2 + 2 * M) + 8 * M * split,
    )


def plan(
    variant: str, M: int, N: int, dtype: str, vec: int, device: Device, cfg: AutoConfig | None = None
) -> Launch:
    """The launch for one (M, N) problem; vec from `pack_width`."""
    cfg = cfg or AUTO
    if variant == "v1":
        spec = Spec("01_softmax_naive.cu", "softmax_naive", dtype)
        return Launch(spec, grid=math.ceil(M / NAIVE_BLOCK), block=NAIVE_BLOCK)
    if variant == "v2":
        spec = Spec("02_softmax_shared.cu", "softmax_shared", dtype, (("BLOCK", SHARED_BLOCK),))
        return Launch(spec, grid=min(M, MAX_GRID), block=SHARED_BLOCK)
    if variant == "v3":
        return plan_fused(M, N, dtype, vec, cfg)
    if variant == "v4":
        return plan_cluster(M, N, dtype, vec, device, cfg) or plan(
            variant="v4_online", M=M, N=N, dtype=dtype, vec=vec, device=device, cfg=cfg
        )
    if variant == "v4_online":
        return Launch(online_spec(dtype, vec), grid=min(M, MAX_GRID), block=ONLINE_THREADS)
    if variant == "v4_split":
        return plan_split(M, N, dtype, vec, device, cfg) or plan("v4", M, N, dtype, vec, device, cfg)
    if variant == "auto":
        fits_v3 = N <= fused_capacity(vec) and (
            N * arrays.ITEMSIZE[dtype] <= cfg.fused_max_row_bytes or device.cc < 90
        )
        if fits_v3:
            return plan("v3", M, N, dtype, vec, device, cfg)
        few_long_rows = M <= cfg.split_max_rows and N * arrays.ITEMSIZE[dtype] >= cfg.split_min_row_bytes
        return plan("v4_split" if few_long_rows else "v4", M, N, dtype, vec, device, cfg)
    raise ValueError(f"softmax: unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")


def specializations() -> list[Spec]:
    """Every Spec `plan` can produce, for the offline compile."""
    specs = []
    for dtype in DTYPES:
        specs.append(Spec("01_softmax_naive.cu", "softmax_naive", dtype))
        specs.append(Spec("02_softmax_shared.cu", "softmax_shared", dtype, (("BLOCK", SHARED_BLOCK),)))
        for vec in (full_vec(dtype), 1):
            specs.extend(
                fused_spec(dtype, tpr, items, vec)
                for tpr, items in fused_ladder(vec, fused_packs(dtype, vec, AUTO))
            )
            specs.append(online_spec(dtype, vec))
        specs.extend(cluster_spec(dtype, c) for c in CLUSTER_SIZES)
        specs.append(split_spec(dtype))
    return specs


# --- running --------------------------------------------------------------------------------


@cache
def _device_props(device_id: int) -> Device:
    import cupy

    dev = cupy.cuda.Device(device_id)
    return Device(
        cc=int(dev.compute_capability), max_shared_per_block=dev.attributes["MaxSharedMemoryPerBlockOptin"]
    )


_refused_cluster16: set[int] = set()


def _device(device_id: int) -> Device:
    d = _device_props(device_id)
    return replace(d, max_cluster=8) if device_id in _refused_cluster16 else d


_plan = lru_cache(maxsize=4096)(plan)


def run_launch(launch: Launch, x: arrays.Rows, y: arrays.Rows, device_id: int, stream) -> None:
    """One planned launch over rows x -> y (same M and N; vec of the plan must suit both)."""
    import numpy as np

    args = (
        np.uint64(x.ptr),
        np.uint64(y.ptr),
        np.int64(x.M),
        np.int32(x.N),
        np.int64(x.row_stride),
        np.int64(y.row_stride),
        *(np.int32(e) for e in launch.extra),
    )
    if launch.workspace_bytes:  # the split kernel's counters (the words before its pairs) start at zero
        import cupy

        ws = _workspace(device_id, stream, launch.workspace_bytes)
        with cupy.cuda.Device(device_id):
            cupy.cuda.runtime.memsetAsync(ws, 0, 4 * (2 + 2 * x.M), stream.ptr)
        args += (np.uint64(ws),)
    codegen.launch(
        launch.spec,
        (launch.grid,),
        (launch.block,),
        args,
        stream=stream,
        device_id=device_id,
        shared_mem=launch.shared_mem,
    )


_workspaces: dict[tuple[int, int], object] = {}
_retired_workspaces: list[object] = []


def _workspace(device_id: int, stream, nbytes: int) -> int:
    """A buffer of at least nbytes for the split kernel (06_softmax_split.cu): one per (device,
    stream), so launches that share it never overlap."""
    import cupy

    key = (device_id, stream.ptr)
    buf = _workspaces.get(key)
    if buf is None or buf.nbytes < nbytes:
        if buf is not None:
            _retired_workspaces.append(buf)  # a launch queued on the stream may still use it
        with cupy.cuda.Device(device_id), stream:
            buf = cupy.zeros(max(nbytes, 2 * (0 if buf is None else buf.nbytes)), dtype=cupy.uint8)
        _workspaces[key] = buf
    return buf.data.ptr


def _run(variant: str, x: arrays.Rows, y: arrays.Rows, dtype: str, device_id: int, stream) -> None:
    vec = pack_width(dtype, x.N, (x.ptr, y.ptr), (x.row_stride, y.row_stride))
    launch = _plan(variant, x.M, x.N, dtype, vec, _device(device_id))
    try:
        run_launch(launch, x, y, device_id, stream)
    except Exception as exc:  # noqa: BLE001 - a refused 16-block cluster is retried with 8; all else raises
        if launch.spec.cluster <= 8 or "CLUSTER" not in str(exc).upper():
            raise
        warnings.warn(
            f"device {device_id} refused a 16-block cluster ({exc}); v4 uses clusters of at most 8",
            RuntimeWarning,
            stacklevel=3,
        )
        _refused_cluster16.add(device_id)
        _run(variant, x, y, dtype, device_id, stream)


def softmax(x, dim: int = -1, variant: str = "auto", *, out=None):
    """softmax of x along `dim` on x's device, on the caller's current stream.

    Without `out`, the result is allocated with the softmax dim innermost and returned as a view in
    x's dim order (contiguous when dim is the last one). With `out`, it is written into `out`
    directly when out's layout allows, else through a temporary."""
    fn = "kernels_cuda.softmax"
    ops = arrays.backend(x, fn)
    dtype = arrays.check_dtype(ops, x, fn)
    d = arrays.normalize_dim(dim, x.ndim, fn)
    if variant not in VARIANTS:
        raise ValueError(f"{fn}: unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    device_id = arrays.check_device(ops, x, fn)
    shape = tuple(x.shape)
    if out is not None:
        _check_out(ops, out, shape, dtype, device_id, fn)
    if x.ndim == 0:  # one element: softmax over a 1-element row
        y = softmax(ops.reshape(x, (1,)), 0, variant, out=None if out is None else ops.reshape(out, (1,)))
        return out if out is not None else ops.reshape(y, ())
    if x.shape[d] > MAX_N:
        raise ValueError(
            f"{fn}: rows of {x.shape[d]} elements along dim {dim}; at most {MAX_N} are supported"
        )
    if math.prod(shape) == 0:
        return out if out is not None else ops.empty(shape, x)

    last = x.ndim - 1
    rows_x = arrays.as_rows(ops, ops.moveaxis(x, d, last) if d != last else x)
    if out is None:
        moved = ops.empty(tuple(s for i, s in enumerate(shape) if i != d) + (shape[d],), x)
        _run(variant, rows_x, arrays.as_rows(ops, moved), dtype, device_id, ops.stream(x))
        return ops.moveaxis(moved, last, d) if d != last else moved
    out_moved = ops.moveaxis(out, d, last) if d != last else out
    stride = arrays.row_stride(tuple(out_moved.shape), ops.strides(out_moved))
    if stride is not None and stride >= rows_x.N:  # out's rows are distinct: write straight into them
        _run(variant, rows_x, arrays.as_rows(ops, out_moved), dtype, device_id, ops.stream(x))
    else:
        tmp = ops.empty(tuple(out_moved.shape), x)
        _run(variant, rows_x, arrays.as_rows(ops, tmp), dtype, device_id, ops.stream(x))
        ops.copy_(out_moved, tmp)
    return out


def _check_out(ops, out, shape, dtype, device_id, fn) -> None:
    if arrays.backend(out, fn) is not ops:
        raise TypeError(f"{fn}: out must be the same kind of array as x ({ops.kind})")
    if tuple(out.shape) != shape or ops.dtype(out) != dtype:
        raise ValueError(
            f"{fn}: out has shape {tuple(out.shape)} and dtype {ops.dtype(out)}; expected {shape} and {dtype}"
        )
    if arrays.check_device(ops, out, fn) != device_id:
        raise ValueError(f"{fn}: out is on device {ops.device_id(out)}, x on device {device_id}")
