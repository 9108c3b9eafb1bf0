"""The call path of `kernels_cuda.softmax_backward`: dx = y * (dy - sum(y * dy)) along `dim`.

    softmax_backward(y, dy, dim=-1, variant="auto", *, batch_invariant=True)

y is the forward's output, dy the gradient of the loss with respect to it; both CuPy arrays or
both torch CUDA tensors of one shape, dtype (float32 / float16 / bfloat16 / float64) and device,
any strides. The result has y's shape and dtype (fp32 accumulation; float64 in double), the same
as `torch.ops.aten._softmax_backward_data(dy, y, dim, y.dtype)`. The plans: backward_plans.py.
While torch.compile or torch.export traces, the call goes through the torch op
`kernels_cuda::softmax_backward` (softmax_op.py), the one autograd calls.
"""

from __future__ import annotations

import ctypes
import math
from functools import lru_cache

from kernels_cuda import arrays, backward_plans, codegen, device_props
from kernels_cuda import launch_types as lt
from kernels_cuda import softmax_variants as sm
from kernels_cuda.backward_plans import VARIANTS, row_plan

ARG_TYPES = (ctypes.c_uint64,) * 3 + (ctypes.c_int64, ctypes.c_int32) + (ctypes.c_int64,) * 3
M_SLOT = 3  # the row count's place among ARG_TYPES
cached_row_plan = lru_cache(maxsize=4096)(row_plan)  # bounded, as the forward's


def packed_launch(launch: lt.Launch, device_id: int, M: int, N: int, strides: tuple[int, int, int]):
    """The launch packed with every argument but the three pointers (y, dy, dx): call it with
    (stream handle, y, dy, dx addresses)."""
    types = ARG_TYPES + (ctypes.c_int32,) * len(launch.extra)
    values = (0, 0, 0, M, N, *strides, *launch.extra)
    return codegen.packed(launch.spec, device_id, launch.grid, launch.block, launch.shared_mem, types, values)


class _RowsRun:
    """A row plan's packed launch: any row count, its grid by integer arithmetic."""

    __slots__ = ("launch", "rows_per_step", "group", "limit", "cluster")

    def __init__(self, rows: lt.RowPlan, device_id: int, N: int, strides: tuple[int, int, int]):
        self.launch = packed_launch(rows.launch(1), device_id, 1, N, strides)
        self.rows_per_step, self.group = rows.rows_per_step, rows.group
        self.cluster = rows.spec.cluster  # (0: none)
        self.limit = lt.MAX_GRID // rows.group

    def __call__(self, stream: int, M: int, y_ptr: int, dy_ptr: int, dx_ptr: int) -> None:
        steps = -(-M // self.rows_per_step)
        grid = self.group * (steps if steps < self.limit else self.limit)
        self.launch.rows(stream, grid, M_SLOT, M, y_ptr, dy_ptr, dx_ptr)


# Packed launches by everything the checks and the plan read but the row count: (N, dtype,
# device, its properties, the config, 16-byte alignment of y, dy, dx and row strides, variant, batch_invariant, pack width,
# shared offsets). Torch calls whose y and dy are contiguous and dim is their last reach theirs by
# `dense_calls`, keyed on their layout, skipping the checks: a fresh dx of y's layout is
# contiguous and aligned like every fresh allocation, so the packed launch suits it.
row_runs: dict[tuple, _RowsRun] = {}
dense_calls: dict[tuple, object] = {}
MAX_CACHED_CALLS = sm.MAX_CACHED_CALLS


def _dense_key(y, dy, dim: int, variant: str) -> tuple:
    """The layout key `softmax_backward` looks a dense torch call up by (built inline there)."""
    return (y.shape, y.stride(), dy.shape, dy.stride(), y.dtype, dy.dtype,
            y.get_device(), dy.get_device(), y.data_ptr() & 15, dy.data_ptr() & 15, dim, variant)  # fmt: skip


def softmax_backward(y, dy, dim: int = -1, variant: str = "auto", *, batch_invariant: bool = True):
    """dx = y * (dy - sum(y * dy, dim)) on y's device, on the caller's current stream.

    The result is allocated with `dim` innermost and returned as a view in y's dim order
    (contiguous when dim is the last one). Torch tensors of a layout seen before (contiguous,
    dim the last) go straight to the cached packed launch: one dictionary lookup, dx's
    allocation and one driver call."""
    if sm.tracing():
        from kernels_cuda import softmax_op

        return softmax_op.backward_through_op(y, dy, dim, variant, batch_invariant)
    if dim.__class__ is int and variant.__class__ is str and batch_invariant is True:
        try:  # the key as `_dense_key` builds it, inline
            y_ptr, dy_ptr, device_index = y.data_ptr(), dy.data_ptr(), y.get_device()
            run = dense_calls.get(
                (y.shape, y.stride(), dy.shape, dy.stride(), y.dtype, dy.dtype,
                 device_index, dy.get_device(), y_ptr & 15, dy_ptr & 15, dim, variant)
            )  # fmt: skip
        except (AttributeError, RuntimeError):  # not torch tensors; fake ones (no data)
            run = None
        if run is not None and y_ptr and dy_ptr:  # (a fake tensor's data pointer is 0)
            dx = sm.empty_like(y)
            if arrays.poisoning:
                dx.fill_(math.nan)
            run(sm.current_stream(device_index), y.numel() // y.shape[-1], y_ptr, dy_ptr, dx.data_ptr())
            return dx
    if arrays.is_torch(y):
        from kernels_cuda import softmax_op

        if softmax_op.is_fake(y) or softmax_op.is_fake(dy):
            return softmax_op.backward_through_op(y, dy, dim, variant, batch_invariant)
    return run_softmax_backward(y, dy, dim, variant, batch_invariant)


def run_softmax_backward(y, dy, dim, variant, batch_invariant=True):
    """The checked path: validates everything, plans and launches."""
    fn = "kernels_cuda.softmax_backward"
    ops = arrays.backend(y, fn)
    dtype = arrays.check_dtype(ops, y, fn, arrays.SOFTMAX_DTYPES)
    if arrays.backend(dy, fn) is not ops:
        raise TypeError(f"{fn}: dy must be the same kind of array as y ({ops.kind})")
    if ops.dtype(dy) != dtype:
        raise TypeError(f"{fn}: dy has dtype {ops.dtype(dy)}, y has {dtype}; they must match")
    if tuple(dy.shape) != tuple(y.shape):
        raise ValueError(f"{fn}: dy has shape {tuple(dy.shape)}, y has {tuple(y.shape)}; they must match")
    d = arrays.normalize_dim(dim, y.ndim, fn)
    if variant not in VARIANTS:
        raise ValueError(f"{fn}: unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    if not isinstance(batch_invariant, bool):
        raise TypeError(f"{fn}: batch_invariant must be True or False, got {batch_invariant!r}")
    device_id = arrays.check_device(ops, y, fn)
    if arrays.check_device(ops, dy, fn) != device_id:
        raise ValueError(f"{fn}: dy is on device {ops.device_id(dy)}, y on device {device_id}")
    shape = tuple(y.shape)
    if y.ndim == 0:  # one element: its softmax is 1 and the gradient is 0 (dy - dy)
        dx = run_softmax_backward(ops.reshape(y, (1,)), ops.reshape(dy, (1,)), 0, variant, batch_invariant)
        return ops.reshape(dx, ())
    if y.shape[d] > lt.MAX_N:
        raise ValueError(
            f"{fn}: rows of {y.shape[d]} elements along dim {dim}; at most {lt.MAX_N} are supported"
        )
    if math.prod(shape) == 0:
        return ops.empty(shape, y)

    last = y.ndim - 1
    rows_y = arrays.as_rows(ops, ops.moveaxis(y, d, last) if d != last else y)
    rows_dy = arrays.as_rows(ops, ops.moveaxis(dy, d, last) if d != last else dy)
    moved = ops.empty(tuple(s for i, s in enumerate(shape) if i != d) + (shape[d],), y)
    rows_dx = arrays.as_rows(ops, moved)
    M, N = rows_y.M, rows_y.N
    pointers = (rows_y.ptr, rows_dy.ptr, rows_dx.ptr)
    strides = (rows_y.row_stride, rows_dy.row_stride, rows_dx.row_stride)
    vec = lt.pack_width(dtype, N, pointers, strides)
    same_offsets = all(
        lt.offsets_match(dtype, (rows_y.ptr, rows.ptr), (rows_y.row_stride, rows.row_stride))
        for rows in (rows_dy, rows_dx)
    )
    plan_m = None if batch_invariant else M
    cfg, device = backward_plans.AUTO, sm.device_for(device_id)
    key = (
        N,
        dtype,
        device_id,
        device,
        cfg,
        *(p % 16 for p in pointers),
        strides,
        variant,
        plan_m,
        vec,
        same_offsets,
    )
    run = row_runs.get(key)
    if run is None:
        rows = cached_row_plan(variant, N, dtype, vec, device, cfg, same_offsets, plan_m)
        if len(row_runs) >= MAX_CACHED_CALLS:
            row_runs.clear()
        run = row_runs[key] = _RowsRun(rows, device_id, N, strides)
    try:
        run(ops.stream(y), M, *pointers)
    except Exception as exc:  # a cluster the device refused: planned again with at most 8 blocks
        if not device_props.refused(exc, device_id, run.cluster):
            raise
        return run_softmax_backward(y, dy, dim, variant, batch_invariant)
    if ops is arrays.TorchOps and d == last and strides == (N,) * 3 and dim.__class__ is int:
        if batch_invariant is True and y.is_contiguous() and dy.is_contiguous():
            if len(dense_calls) >= MAX_CACHED_CALLS:
                dense_calls.clear()
            dense_calls[_dense_key(y, dy, dim, variant)] = run
    return ops.moveaxis(moved, last, d) if d != last else moved
