"""The launches of cuda/09_cross_entropy.cu for cross_entropy_op.py: the forward (loss, lse, entropy
and the gradient per row), the reduced loss (count, forward, sum: no torch op between them), the
backward from the saved lse, and the in-place scale of a gradient the forward wrote; and where
the gradient goes (`new_grad`: at the logits' rows' addresses mod 16, so that the kernels store
it in 16-byte packs). Plans come from row_kernels.xent_config (and xent_cluster: the forward of
long rows over a cluster, cuda/11_cross_entropy_cluster.cu). A forward whose cluster launch the
device refused is planned again (device_props.refused): clusters of at most 8 blocks, or 09 where
8 blocks do not hold the row.

A call costs the host a dict lookup of its packed launches (keyed by everything but the
addresses: made once per shape, dtype, device and scalar arguments), the allocations and the
launches themselves: the op is host-bound at short rows (an LM head's small vocabulary).
"""

from __future__ import annotations

import ctypes
import math

import torch

from kernels_cuda import arrays, device_props, softmax_caches
from kernels_cuda import log_softmax_op as rows
from kernels_cuda import row_kernels as rk

_NAMES = {getattr(torch, name): name for name in rk.DTYPES}
_ACC = {name: torch.float64 if name == "float64" else torch.float32 for name in rk.DTYPES}


def dtype_of(x: torch.Tensor) -> str:
    return _NAMES[x.dtype]


def acc_dtype(dtype: str) -> torch.dtype:
    return _ACC[dtype]


LSE_DTYPE = torch.float64  # the rows' saved lse: max + log s, exactly (09's header says why)


def _empty(n: int, like: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    out = torch.empty(n, dtype=dtype, device=like.device)
    if arrays.poisoning:
        out.fill_(math.nan)
    return out


def _grid(M: int, cfg) -> int:
    return min(-(-M // cfg.rpb), rk.MAX_GRID)


def new_grad(x2: torch.Tensor) -> torch.Tensor:
    """A fresh (M, N) gradient whose rows lie at the addresses of x2's rows mod 16 bytes where x2's
    rows are N apart (so the kernels store them in 16-byte packs; elsewhere they store elements)."""
    M, N = x2.shape
    if rows.row_stride(x2) != N:
        return rows.new_output((M, N), x2)
    lead = x2.data_ptr() % rk.PACK_BYTES // x2.element_size()
    if lead == 0:  # (a fresh buffer starts on a 16-byte boundary)
        return rows.new_output((M, N), x2)
    return rows.new_output((M * N + lead,), x2)[lead:].view(M, N)


# --- packed launches, made once per key -----------------------------------------------------------

_runs: dict[tuple, object] = {}


def forget_plans() -> None:
    """Drop the packed launches (softmax_caches.clear_caches: after a device refused a cluster,
    its forward's split is made again)."""
    _runs.clear()


softmax_caches.FORGET.append(forget_plans)


def _refused(exc: Exception, dtype: str, device_id: int, N: int, smoothing: float, entropy: bool) -> bool:
    """device_props.refused for a forward's launch that raised: its cluster size is the plan's,
    made again (the run keeps none; the device is not yet among those refused)."""
    plan = rk.xent_cluster(N, dtype, smoothing, entropy, device_id)
    return device_props.refused(exc, device_id, 0 if plan is None else plan.cluster)


def _cached(build, *args):
    """build(*args), made once per (build, args) (the hot path: one tuple and one dict lookup)."""
    key = (build, *args)
    run = _runs.get(key)
    if run is None:
        if len(_runs) >= rk.MAX_CACHED_LAUNCHES:
            _runs.clear()
        run = _runs[key] = build(*args)
    return run


def _forward_run(
    kernel, dtype, device_id, M, N, x_stride, grad_stride, ignore_index, smoothing, entropy, limit
):
    """The packed forward (kernel "f"; grad_stride 0: no gradient) or backward ("b"); pointers
    (x, grad, target, then the kernel's per-row arrays; the forward's last two: the counts its
    gradient's scale sums and the ticket it zeroes, 0 for none). limit: rk.STAGE_LIMIT, which the
    staged part of a row depends on (a key: it may change between calls). The forward of a long row
    without smoothing or entropy goes over a cluster (11, rk.xent_cluster): a cluster a row, the
    same pointers."""
    args = ((ctypes.c_int64, M), (ctypes.c_int32, N), (ctypes.c_int64, x_stride),
            (ctypes.c_int64, grad_stride), (ctypes.c_int64, ignore_index))  # fmt: skip
    cluster = rk.xent_cluster(N, dtype, smoothing, entropy, device_id) if kernel == "f" else None
    if cluster is not None:  # (M * cluster blocks: within the grid's limit for any M that fits in memory)
        args += ((ctypes.c_int32, cluster.chunk),)
        return rk.packed(
            cluster.spec(dtype), device_id, M * cluster.cluster, rk.XENT_CLUSTER_THREADS, 0, 8, args
        )
    cfg = rk.xent_config(N, dtype)
    args += ((rk.acc_ctype(dtype), smoothing),)
    if kernel == "b":
        spec, staged, pointers = rk.cross_entropy_spec("cross_entropy_backward", dtype, cfg), 0, 7
    else:
        spec = rk.cross_entropy_spec("cross_entropy_forward", dtype, cfg, entropy)
        room = rk.stage_room(device_id)
        staged = rk.xent_staged_packs(N, dtype, cfg, room) if grad_stride else 0
        args += ((ctypes.c_int32, staged),)
        pointers = 8
    return rk.packed(spec, device_id, _grid(M, cfg), cfg.threads, staged * rk.PACK_BYTES, pointers, args)


def _scalar_run(kernel, dtype, device_id, *args):
    """cross_entropy_count (args M, ignore_index: pointers target, counts, ticket) or
    cross_entropy_reduce (M, ignore_index: loss, target, counts, parts, ticket, out, applied), on
    rk.REDUCE_PARTS blocks, a chunk of the rows each; or cross_entropy_scale (numel, k: grad, g,
    applied)."""
    spec = rk.cross_entropy_spec(kernel, dtype, rk.scale_config(dtype))
    if kernel == "cross_entropy_scale":
        n, k = args
        threads = rk.scale_config(dtype).threads
        blocks = max(1, min(rk.sms(device_id) * rk.SCALE_BLOCKS_PER_SM, -(-n // threads)))
        return rk.packed(spec, device_id, blocks, threads, 0, 3, ((ctypes.c_int32, k), (ctypes.c_int64, n)))
    M, ignore_index = args
    pointers = 3 if kernel == "cross_entropy_count" else 7
    scalars = ((ctypes.c_int64, M), (ctypes.c_int64, ignore_index))
    return rk.packed(spec, device_id, rk.REDUCE_PARTS, rk.REDUCE_THREADS, 0, pointers, scalars)


def workspace_layout(M: int, size: int) -> tuple[int, int, int, int, int]:
    """run_reduced's workspace of elements of `size` bytes (the accumulator's) as byte offsets:
    (partials, counts, ticket, applied, the length in elements). From 0 the M rows' losses; from
    the first 8-byte boundary past them the reduce's rk.REDUCE_PARTS partials (fp64); the
    REDUCE_PARTS chunk counts (int32); the reduce's ticket (int32) in the high half of the next
    8-byte word, which NaN poison fills with non-zero bits in either dtype (an fp64 NaN's low half
    is 0), so that a ticket nobody zeroed shows under poison; last, 8-byte aligned, the pair of
    factors the gradient carries (acc_t, `run_scale`). (The allocation itself starts 8-byte aligned
    or more.)"""
    parts = -(-M * size // 8) * 8
    counts = parts + 8 * rk.REDUCE_PARTS
    ticket = counts + 4 * rk.REDUCE_PARTS + 4
    applied = ticket + 4
    return parts, counts, ticket, applied, applied // size + 2


def _reduced_runs(dtype, device_id, M, N, x_stride, grad_stride, ignore_index, smoothing, mean, limit):
    """run_reduced's packed launches (count: None unless the mean's gradient needs it first, before
    the forward), and the workspace's layout."""
    with_count = mean and grad_stride != 0
    return (
        _scalar_run("cross_entropy_count", dtype, device_id, M, ignore_index) if with_count else None,
        _forward_run(
            "f", dtype, device_id, M, N, x_stride, grad_stride, ignore_index, smoothing, False, limit
        ),
        _scalar_run("cross_entropy_reduce", dtype, device_id, M, ignore_index),
        workspace_layout(M, 8 if dtype == "float64" else 4),
    )


def _stream(device_id: int) -> int:
    return arrays.torch_stream_getter()(device_id)


# --- the launches ---------------------------------------------------------------------------------


def run_forward(x2, t, ignore_index, smoothing, *, entropy=False):
    """The forward over rows x2 (M, N) with int64 targets t (M,): (loss or -logprob, lse,
    entropy or None) per row, fp32 (fp64 for fp64)."""
    dtype = _NAMES[x2.dtype]
    M, N = x2.shape
    device_id = x2.get_device()
    run = _cached(_forward_run, "f", dtype, device_id, M, N, rows.row_stride(x2), 0, ignore_index,
                  float(smoothing), entropy, rk.STAGE_LIMIT)  # fmt: skip
    loss, lse = _empty(M, x2, _ACC[dtype]), _empty(M, x2, LSE_DTYPE)
    ent = _empty(M, x2, _ACC[dtype]) if entropy else None
    try:
        run(_stream(device_id), x2.data_ptr(), 0, t.data_ptr(), loss.data_ptr(), lse.data_ptr(),
            0 if ent is None else ent.data_ptr(), 0, 0)  # fmt: skip
    except Exception as exc:  # a cluster the device refused: planned again with at most 8 blocks
        if not _refused(exc, dtype, device_id, N, float(smoothing), entropy):
            raise
        return run_forward(x2, t, ignore_index, smoothing, entropy=entropy)
    return loss, lse, ent


def run_reduced(x2, t, ignore_index, smoothing, mean, *, grad2=None, lse=None):
    """The mean (mean=True) or summed loss over rows x2 (M > 0, N) with int64 targets t (M,), a
    0-d tensor of x2's dtype, reduced on the device (no sync); the gradient of the loss into
    grad2 if given (rows of stride N, or x2 itself), the rows' lse into lse if given. Returns
    (loss, workspace): the workspace (floats, fp64 for fp64; `workspace_layout`) holds the rows'
    losses, the reduce's partials, chunk counts and ticket, and last the pair of factors the
    gradient carries (1 in the first: `run_scale` reads it)."""
    dtype = _NAMES[x2.dtype]
    M, N = x2.shape
    device_id = x2.get_device()
    gs = 0 if grad2 is None else rows.row_stride(grad2)
    count_run, forward, reduce, layout = _cached(_reduced_runs, dtype, device_id, M, N, rows.row_stride(x2), gs,
                                                 ignore_index, float(smoothing), mean, rk.STAGE_LIMIT)  # fmt: skip
    parts, counts, ticket, applied, numel = layout
    ws = _empty(numel, x2, _ACC[dtype])  # (anything in it, NaN under poison: each slot written before read)
    loss = rows.new_output((), x2)
    stream = _stream(device_id)
    w, tp = ws.data_ptr(), t.data_ptr()
    # The reduce's ticket is zeroed by the count where it runs (the mean's gradient: its scale
    # 1 / count, before the forward), else by the forward. Without a gradient, the mean's count is
    # taken by the reduce itself (from the targets).
    if count_run is not None:
        count_run(stream, tp, w + counts, w + ticket)
    try:
        forward(stream, x2.data_ptr(), 0 if grad2 is None else grad2.data_ptr(), tp, w,
                0 if lse is None else lse.data_ptr(), 0, 0 if count_run is None else w + counts,
                w + ticket if count_run is None else 0)  # fmt: skip
    except Exception as exc:  # a cluster the device refused: planned again with at most 8 blocks
        if not _refused(exc, dtype, device_id, N, float(smoothing), False):
            raise
        return run_reduced(x2, t, ignore_index, smoothing, mean, grad2=grad2, lse=lse)
    counted = mean and grad2 is None
    reduce(stream, w, tp if counted else 0, w + counts if mean else 0, w + parts, w + ticket, loss.data_ptr(),
           w + applied)  # fmt: skip
    return loss, ws


def run_backward(x2, t, lse, g_loss, ignore_index, smoothing, entropy=None, g_entropy=None):
    """grad (M, N) = g_loss (p - (1 - eps) onehot - eps / N) [- g_entropy p (log p + H)]."""
    dtype = _NAMES[x2.dtype]
    M, N = x2.shape
    device_id = x2.get_device()
    run = _cached(_forward_run, "b", dtype, device_id, M, N, rows.row_stride(x2), N, ignore_index,
                  float(smoothing), False, None)  # fmt: skip
    grad2 = new_grad(x2)
    run(_stream(device_id), x2.data_ptr(), grad2.data_ptr(), t.data_ptr(), lse.data_ptr(), g_loss.data_ptr(),
        0 if entropy is None else entropy.data_ptr(), 0 if g_entropy is None else g_entropy.data_ptr())  # fmt: skip
    return grad2


def run_scale(grad: torch.Tensor, g: torch.Tensor, ws: torch.Tensor, k: int) -> int:
    """grad *= g / applied in place, on the device (nothing read when they are equal): g the
    loss's upstream gradient (one element), applied the factor grad carries, slot k of the pair
    that ends `run_reduced`'s workspace ws, where g is recorded for the next call. Returns that
    call's k."""
    if g.dtype != grad.dtype:  # (autograd hands the loss's own dtype over)
        g = g.to(grad.dtype)
    dtype = _NAMES[grad.dtype]
    device_id = grad.get_device()
    run = _cached(_scalar_run, "cross_entropy_scale", dtype, device_id, grad.numel(), k)
    applied = ws.data_ptr() + (ws.numel() - 2) * ws.element_size()
    run(_stream(device_id), grad.data_ptr(), g.data_ptr(), applied)
    return 1 - k
