"""log_softmax in CUDA C, with its backward, for torch CUDA tensors: the softmax's kernels with a
log epilogue wherever the softmax's rule would run them, else cuda/10_log_softmax.cu. Rows of whole
16-byte packs that the softmax holds in registers run its 03 and 06 (registers_plan: 10 would take
a block a row through shared memory); on sm_90, rows longer than a block's shared memory (which 10
would read twice) and odd rows (which it would move an element at a time) go over a thread-block
cluster: the softmax's 04 and 07 (cluster_plan).

    log_softmax(x, dim=-1)

x: float32, float16, bfloat16 or float64, any shape and strides; the result is F.log_softmax's
(rows reduced in fp32, fp64 for fp64), autograd works (dx = dy - exp(y) * sum(dy), a kernel too),
and under torch.compile it is one opaque op, kernels_cuda::log_softmax, with its backward.

`kernels_cuda.log_softmax` is the function below (the package exports it; this module's name
differs from it, so importing the module never shadows it).

The torch side of the row machinery (`check_tensor`, `rows_of`, `from_rows`) is shared with
cross_entropy_op.py; the plans and launches are in row_kernels.py.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import replace
from functools import lru_cache

import torch

from kernels_cuda import (
    arrays,
    backward_plans,
    cluster_plans,
    device_props,
    fused_plans,
    picks,
    softmax_caches,
    softmax_plans,
)
from kernels_cuda import row_kernels as rk
from kernels_cuda import softmax_variants as sm
from kernels_cuda.launch_types import Device, RowPlan, full_vec, offsets_match, pack_width


def dtype_name(x: torch.Tensor, fn: str, what: str = "x") -> str:
    name = str(x.dtype).removeprefix("torch.")
    if name not in rk.DTYPES:
        raise TypeError(f"{fn}: {what} has dtype {name}; supported: {', '.join(rk.DTYPES)}")
    return name


def check_tensor(x, fn: str, what: str = "x") -> str:
    """x's dtype name, after checking it is a torch tensor of a supported dtype on a CUDA device
    (a fake or meta CUDA tensor passes: shapes are checked without a GPU)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{fn}: {what} must be a torch tensor, got {type(x).__name__}")
    name = dtype_name(x, fn, what)
    if x.device.type != "cuda":
        raise ValueError(f"{fn}: {what} is on {x.device}; kernels_cuda runs on CUDA devices")
    return name


def rows_of(x: torch.Tensor, d: int, vec: int) -> torch.Tensor:
    """x as (M, N) rows along dim d, each row's elements adjacent, in 16-byte aligned rows of a
    stride divisible by vec where vec > 1: a view where x allows it, else a fresh copy."""
    xm = x.movedim(d, -1) if d != x.dim() - 1 else x
    N = xm.shape[-1]
    x2 = xm.reshape(-1, N)
    M = x2.shape[0]
    row_stride = x2.stride(0) if M > 1 else N
    ok = (N == 1 or x2.stride(1) == 1) and row_stride >= 0
    if vec > 1:
        ok = ok and x2.data_ptr() % rk.PACK_BYTES == 0 and row_stride % vec == 0
    return x2 if ok else torch.empty((M, N), dtype=x.dtype, device=x.device).copy_(x2)


def row_stride(x2: torch.Tensor) -> int:
    return x2.stride(0) if x2.shape[0] > 1 else x2.shape[1]


def moved_shape(shape, d: int) -> tuple[int, ...]:
    shape = tuple(shape)
    return shape[:d] + shape[d + 1 :] + (shape[d],)


def from_rows(y2: torch.Tensor, shape, d: int) -> torch.Tensor:
    """(M, N) rows back to `shape`, the row dim at d (a view)."""
    y = y2.view(moved_shape(shape, d))
    return y.movedim(-1, d) if d != len(shape) - 1 else y


def empty_rows(x: torch.Tensor, d: int) -> torch.Tensor:
    """An output like x laid out as the launches lay theirs out: rows along d innermost."""
    shape = moved_shape(x.shape, d)
    return from_rows(x.new_empty((math.prod(shape[:-1]), shape[-1])), x.shape, d)


def check_dim(x: torch.Tensor, dim, fn: str) -> int:
    return arrays.normalize_dim(dim, max(x.dim(), 1), fn)


def new_output(shape, like: torch.Tensor) -> torch.Tensor:
    out = torch.empty(shape, dtype=like.dtype, device=like.device)
    if arrays.poisoning:
        out.fill_(math.nan)
    return out


# --- the softmax's kernels with the log epilogue: 03 / 06 (rows in registers), 04 / 07 (clusters)


@lru_cache(maxsize=4096)  # on every call's path (bounded, as the softmax's plans)
def registers_plan(direction: str, N: int, dtype: str, vec: int, device: Device) -> RowPlan | None:
    """The softmax's own plan with its log epilogue where that plan holds the row in registers
    ("fwd": 03, "bwd": 06's fused kernel), or None: rows of whole 16-byte packs (vec, over every
    array of the launch), which 10 would take through shared memory, a block a row. The softmax's
    auto plan (this card's picks, else its rule) for every row count (M None): a row's threads,
    and so its sums' order, never depend on the batch."""
    if dtype == "float64" or vec != full_vec(dtype):
        return None
    plans, kernel = (
        (softmax_plans, "softmax_fused") if direction == "fwd" else (backward_plans, "softmax_backward_fused")
    )
    _, plan = plans.auto_plan(N, dtype, vec, device)
    return replace(plan, spec=fused_plans.with_log(plan.spec)) if plan.spec.kernel == kernel else None


@lru_cache(maxsize=4096)  # on every call's path (bounded, as the softmax's plans)
def cluster_plan(
    direction: str, N: int, dtype: str, vec: int, device: Device, same_offsets: bool = False
) -> RowPlan | None:
    """The cluster kernel of `direction` ("fwd": 04, "bwd": 07, each with its log epilogue), or None
    where 10 takes the rows, on a device with clusters: rows of whole 16-byte packs (vec, over every
    array of the launch) longer than a block's shared memory, which 10 would read twice (the
    forward x, the backward dy); rows that are not whole packs (10 would move them an element at a
    time) whose arrays share their offsets from a 16-byte boundary, where the softmax's auto plan
    takes its cluster. From (N, dtype, vec, same_offsets, device) alone: a row's split (by its
    address mod 16, as the softmax's) and every sum's order never depend on the batch."""
    size, full = rk.ITEMSIZE[dtype], full_vec(dtype)
    if dtype == "float64" or device.cc < 90:
        return None
    if vec == full and N * size <= device.max_shared_per_block - rk.STAGE_RESERVE:
        return None
    if vec != full:  # odd rows: where the softmax goes over a cluster
        kernel = "softmax_cluster" if direction == "fwd" else "softmax_backward_cluster"
        plans = softmax_plans if direction == "fwd" else backward_plans
        if not same_offsets or plans.auto_plan(N, dtype, vec, device, None, True)[1].spec.kernel != kernel:
            return None
    if direction == "bwd":  # dy in shared memory: held in registers, exp(y) beside it spills
        cfg = replace(picks.for_card(backward_plans.AUTO, device), cluster_dy_in_registers=False)
        return backward_plans.plan_cluster(N, dtype, vec, device, cfg, same_offsets, log=True)
    cfg = picks.for_card(softmax_plans.AUTO, device)
    return cluster_plans.plan_cluster(N, dtype, vec, device, cfg, same_offsets, log=True)


def forget_plans() -> None:
    """Drop the cached plans (softmax_caches.clear_caches: a device that refused a cluster, a new
    AutoConfig or picks, which these plans follow)."""
    registers_plan.cache_clear()
    cluster_plan.cache_clear()


softmax_caches.FORGET.append(forget_plans)


# --- the op ---------------------------------------------------------------------------------

FN = "kernels_cuda.log_softmax"


def _forward(x: torch.Tensor, dim: int) -> torch.Tensor:
    dtype = check_tensor(x, FN)
    if x.dim() == 0:
        return _forward(x.reshape(1), 0).reshape(())
    d = check_dim(x, dim, FN)
    N = x.shape[d]
    if N > rk.MAX_N:
        raise ValueError(f"{FN}: rows of {N} elements along dim {dim}; at most {rk.MAX_N} are supported")
    if x.numel() == 0:
        return empty_rows(x, d)
    cfg = rk.row_config(N, dtype)
    x2 = rows_of(x, d, cfg.vec)
    M = x2.shape[0]
    y2 = new_output((M, N), x)
    device_id = x.get_device()
    spec, grid, block, shared, last = _plan("fwd", cfg, [x2, y2], dtype, device_id)
    try:
        rk.launch(
            spec, device_id, grid, block, shared, (x2.data_ptr(), y2.data_ptr()),
            ((ctypes.c_int64, M), (ctypes.c_int32, N), (ctypes.c_int64, row_stride(x2)),
             (ctypes.c_int64, N), *last),
        )  # fmt: skip
    except Exception as exc:  # a cluster the device refused: planned again with at most 8 blocks
        if not device_props.refused(exc, device_id, spec.cluster):
            raise
        return _forward(x, dim)
    return from_rows(y2, x.shape, d)


def _plan(direction: str, cfg, rows: list[torch.Tensor], dtype: str, device_id: int) -> tuple:
    """(spec, grid, block, shared memory, last arguments) of the launch over these (M, N) rows:
    registers_plan's (no last argument), cluster_plan's (the chunk), else 10's (the packs it
    stages)."""
    M, N = rows[0].shape
    addresses, strides = tuple(r.data_ptr() for r in rows), tuple(row_stride(r) for r in rows)
    vec = pack_width(dtype, N, addresses, strides)
    same = all(offsets_match(dtype, (addresses[0], a), (strides[0], s)) for a, s in zip(addresses, strides))
    device = sm.device_for(device_id)
    plan = registers_plan(direction, N, dtype, vec, device) or cluster_plan(
        direction, N, dtype, vec, device, same
    )
    if plan is not None:
        last = tuple((ctypes.c_int32, e) for e in plan.extra)
        return plan.spec, plan.grid(M), plan.block, plan.shared_mem, last
    kernel = "log_softmax_forward" if direction == "fwd" else "log_softmax_backward"
    staged = rk.staged_packs(N, dtype, cfg, rk.stage_room(device_id))
    shared = staged * cfg.vec * rk.ITEMSIZE[dtype]
    return (
        rk.log_softmax_spec(kernel, dtype, cfg),
        min(M, rk.MAX_GRID),
        cfg.threads,
        shared,
        ((ctypes.c_int32, staged),),
    )


def _backward(y: torch.Tensor, dy: torch.Tensor, dim: int) -> torch.Tensor:
    fn = "kernels_cuda.log_softmax_backward"
    dtype = check_tensor(y, fn, "y")
    dy = dy.to(y.dtype)
    if tuple(dy.shape) != tuple(y.shape):
        raise ValueError(f"{fn}: dy has shape {tuple(dy.shape)}, y has {tuple(y.shape)}; they must match")
    if y.dim() == 0:
        return _backward(y.reshape(1), dy.reshape(1), 0).reshape(())
    d = check_dim(y, dim, fn)
    N = y.shape[d]
    if y.numel() == 0:
        return empty_rows(y, d)
    cfg = rk.row_config(N, dtype)
    y2, dy2 = rows_of(y, d, cfg.vec), rows_of(dy, d, cfg.vec)
    M = y2.shape[0]
    dx2 = new_output((M, N), y)
    device_id = y.get_device()
    spec, grid, block, shared, last = _plan("bwd", cfg, [y2, dy2, dx2], dtype, device_id)
    try:
        rk.launch(
            spec, device_id, grid, block, shared, (y2.data_ptr(), dy2.data_ptr(), dx2.data_ptr()),
            ((ctypes.c_int64, M), (ctypes.c_int32, N), (ctypes.c_int64, row_stride(y2)),
             (ctypes.c_int64, row_stride(dy2)), (ctypes.c_int64, N), *last),
        )  # fmt: skip
    except Exception as exc:  # a cluster the device refused: planned again with at most 8 blocks
        if not device_props.refused(exc, device_id, spec.cluster):
            raise
        return _backward(y, dy, dim)
    return from_rows(dx2, y.shape, d)


def _fake_like_rows(x: torch.Tensor, dim: int) -> torch.Tensor:
    return x.new_empty(()) if x.dim() == 0 else empty_rows(x, check_dim(x, dim, FN))


@torch.library.custom_op("kernels_cuda::log_softmax", mutates_args=())
def _log_softmax_op(x: torch.Tensor, dim: int) -> torch.Tensor:
    return _forward(x, dim)


@_log_softmax_op.register_fake
def _(x, dim):
    check_tensor(x, FN)
    return _fake_like_rows(x, dim)


@torch.library.custom_op("kernels_cuda::log_softmax_backward", mutates_args=())
def _log_softmax_backward_op(y: torch.Tensor, dy: torch.Tensor, dim: int) -> torch.Tensor:
    return _backward(y, dy, dim)


@_log_softmax_backward_op.register_fake
def _(y, dy, dim):
    check_tensor(y, "kernels_cuda.log_softmax_backward", "y")
    return _fake_like_rows(y, dim)


def _setup_context(ctx, inputs, output):
    ctx.dim = inputs[1]
    ctx.save_for_backward(output)


def _backward_formula(ctx, dy):
    (y,) = ctx.saved_tensors
    return _log_softmax_backward_op(y, dy, ctx.dim), None


_log_softmax_op.register_autograd(_backward_formula, setup_context=_setup_context)


def log_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """F.log_softmax(x, dim) from one CUDA kernel (autograd and torch.compile through the op
    kernels_cuda::log_softmax; without grad, in eager mode, the launch is called directly)."""
    check_tensor(x, FN)
    check_dim(x, dim, FN)
    if torch.compiler.is_compiling() or (x.requires_grad and torch.is_grad_enabled()):
        return _log_softmax_op(x, dim)
    return _forward(x, dim)


def log_softmax_backward(y: torch.Tensor, dy: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """dx = dy - exp(y) * sum(dy, dim), y being log_softmax's output."""
    return _backward(y, dy, dim)
