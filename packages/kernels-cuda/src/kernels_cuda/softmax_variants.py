"""Row-wise softmax in CUDA C, v1 naive -> v4 long rows: the call path of `kernels_cuda.softmax`.

    softmax(x, dim=-1, variant="auto", *, out=None, batch_invariant=True)

x: a CuPy array or torch CUDA tensor, float32 / float16 / bfloat16 (bf16 through torch: CuPy has
none) or float64, any shape and strides; the result has x's type, shape and dtype (fp32
accumulation; float64 in double). A torch tensor that needs autograd, or a call being traced by
torch.compile or torch.export, goes through the torch op `kernels_cuda::softmax` (softmax_op.py).

The variants, one .cu file each under cuda/ (read them in order):
    v1         01_softmax_naive.cu    one thread per row, three passes from DRAM
    v2         02_softmax_shared.cu   one block per row, shared-memory tree reductions
    v3         03_softmax_fused.cu    row in registers: one read, one write, 16-byte accesses
    v4         04_softmax_cluster.cu  long rows over a thread-block cluster (sm_90): asynchronous copies
                                      into shared memory (or a few packs a thread in registers),
                                      DSMEM exchange
               05_softmax_online.cu   without clusters, past their capacity, or for rows that are
                                      not whole 16-byte packs: two-pass online softmax
    v4_online  05_softmax_online.cu   the online path alone, for comparison
    auto       v3 for rows up to AutoConfig.fused_max_row_bytes, else v4 (v3 for a row no cluster
               takes, while it holds the row); float64: 08_softmax_f64.cu

The host path, in the order a call takes it:
    planning   softmax_plans.row_plan(variant, N, dtype, vec, device, ...) -> RowPlan, per (N,
               dtype, layout); the grid for M rows follows by integer arithmetic. Which kernel
               runs is decided there (`plan`, re-exported here, gives one M's launch)
    prepare    softmax_prepare.prepare(shape, strides, dtype, dim, variant, device, ...) -> Prepared: the views,
               copies and the Launch one input layout needs
    running    softmax(): checks, then a `_Call` cached per layout (the Prepared call bound to
               the device's kernel, its arguments packed) does the allocation and one launch; a
               dense torch input of a row count not seen before takes its row plan's packed
               launch (`RowsCall`), with the row count and grid written in
Planning and prepare are plain Python over shapes: every plan can be checked (and every Spec it
can produce compiled) without a GPU.

This module runs calls; the caches it keeps are in softmax_caches.py, the packed launches in
softmax_launch.py, the device's properties in device_props.py.
"""

from __future__ import annotations

import math
import sys

from kernels_cuda import arrays, device_props, softmax_plans

# Re-exported: this module has always offered the planning names, and those of the device, the
# caches and the packed launches it uses.
from kernels_cuda.cluster_plans import (  # noqa: F401
    CLUSTER_SIZES,
    CLUSTER_THREADS,
    cluster_chunks,
    cluster_items,
    cluster_room,
    cluster_spec,
    cluster_split,
    online_spec,
    plan_cluster,
)
from kernels_cuda.device_props import device_for
from kernels_cuda.fused_plans import (  # noqa: F401
    FEW_ROWS_BLOCK,
    fused_capacity,
    fused_items_max,
    fused_ladder,
    fused_packs,
    fused_spec,
    plan_fused,
)
from kernels_cuda.launch_types import (  # noqa: F401
    A100,
    H100,
    MAX_GRID,
    MAX_N,
    Device,
    Launch,
    RowPlan,
    full_vec,
    offsets_match,
    pack_width,
    reduction_order,
)
from kernels_cuda.softmax_caches import (  # noqa: F401
    cached_plan,
    cached_prepare,
    clear_caches,
    prepared_calls,
    rows_calls,
    set_auto_config,
    torch_calls,
)
from kernels_cuda.softmax_launch import RowsCall, packed_launch
from kernels_cuda.softmax_plans import VARIANTS, AutoConfig, plan, row_plan, specializations  # noqa: F401
from kernels_cuda.softmax_prepare import Prepared, cached_row_plan, prepare  # noqa: F401

DTYPES = arrays.SUPPORTED_DTYPES  # the packed kernels'; float64 too, through 08 (arrays.SOFTMAX_DTYPES)


def __getattr__(name: str):
    if name == "AUTO":  # the current one: set_auto_config replaces it
        return softmax_plans.AUTO
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


MAX_CACHED_CALLS = 4096  # past this many layouts, a cache starts over: memory stays flat


class _Call:
    """A `Prepared` call bound to one device's kernel, its arguments packed: what the per-layout
    caches hold. Calling it does the view, copy, allocation and launch the plan says."""

    __slots__ = ("prepared", "ops", "run", "fresh_rows", "dense_run")

    def __init__(self, prepared: Prepared, ops, device_id: int):
        p = self.prepared = prepared
        self.ops = ops
        x_stride = p.N if p.x_row_stride is None else p.x_row_stride
        self.run = packed_launch(p.launch, device_id, x_stride, p.y_row_stride, p.M, p.N).two
        self.fresh_rows = not p.moved and p.x_row_stride is not None  # the common case, no views
        # x's rows are back to back (x is dense): an output like x has rows of stride N too, so
        # `softmax` allocates it with empty_like and launches `run` itself (None: not dense).
        self.dense_run = self.run if self.fresh_rows and p.x_row_stride == p.N else None

    def torch(self, x, x_ptr: int, device_index: int):
        """The call for a torch tensor without out=, for what `softmax`'s own dense path leaves."""
        if self.dense_run is not None:
            y = empty_like(x)
            if arrays.poisoning:
                y.fill_(math.nan)
            self.run(current_stream(device_index), x_ptr, y.data_ptr())
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


def _torch_key(x, ptr: int, dim: int, variant: str) -> tuple:
    """The layout key `softmax` looks a torch call up by (built inline there, for speed). A
    contiguous tensor's strides follow from its shape wherever they matter (torch ignores those of
    size-1 dims, and so does `arrays.row_stride`), so its key leaves them out: one call fewer. The
    two kinds of key differ in length, so they never meet."""
    if x.is_contiguous():
        return (x.shape, x.dtype, x.get_device(), ptr & 15, dim, variant)
    return (x.shape, x.stride(), x.dtype, x.get_device(), ptr & 15, dim, variant)


# The torch functions the cached path calls, each bound to its module global on first use:
# importing this module needs no torch, and a global is the cheapest thing to look up per call.


def empty_like(x):  # noqa: F811 - rebinds itself on first use
    global empty_like
    import torch

    empty_like = torch.empty_like
    return empty_like(x)


def current_stream(device_index: int) -> int:  # noqa: F811 - rebinds itself on first use
    global current_stream
    current_stream = arrays.torch_stream_getter()
    return current_stream(device_index)


def _grad_enabled() -> bool:
    global _grad_enabled
    import torch

    _grad_enabled = torch.is_grad_enabled
    return _grad_enabled()


def tracing() -> bool:  # noqa: F811 - rebinds itself on first use
    """torch.compile or torch.export is tracing (False while torch is not even imported)."""
    global tracing
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "compiler"):
        return False
    tracing = torch.compiler.is_compiling
    return tracing()


if "torch" in sys.modules and hasattr(sys.modules["torch"], "compiler"):
    tracing = sys.modules["torch"].compiler.is_compiling  # noqa: F811 - bound now if it can be


def softmax(x, dim: int = -1, variant: str = "auto", *, out=None, batch_invariant: bool = True):
    """softmax of x along `dim` on x's device, on the caller's current stream.

    Without `out`, the result is allocated with the softmax dim innermost and returned as a view in
    x's dim order (contiguous when dim is the last one). With `out`, it is written into `out`
    directly when out's layout allows, else through a temporary.

    batch_invariant (default True): each row's bits depend on (N, dtype) and the row's address
    modulo 16 bytes (as torch's), never on the other rows or their count; False lets the row
    count pick faster forms for some launches (softmax_plans).

    A torch tensor whose layout (shape, strides, dtype, device, 16-byte alignment) was seen before
    with the same dim and variant goes straight to its cached call: one dictionary lookup, the
    output's allocation and one driver call, all from here when x is dense. A dense one of a new
    row count takes its row plan's launch (`RowsCall`)."""
    if tracing():
        from kernels_cuda import softmax_op

        return softmax_op.through_op(x, dim, variant, out, batch_invariant)
    if out is None and dim.__class__ is int and variant.__class__ is str and batch_invariant is True:
        try:  # the key as `_torch_key` builds it, inline
            ptr, device_index = x.data_ptr(), x.get_device()
            if not ptr or (x.requires_grad and _grad_enabled()):  # no data (empty, fake); autograd
                call = rows = None
            elif x.is_contiguous():
                call = torch_calls.get((x.shape, x.dtype, device_index, ptr & 15, dim, variant))
                rows = rows_calls.get((x.shape[-1], x.dtype, device_index, ptr & 15, variant)) if (
                    call is None and x.ndim and (dim == -1 or dim == x.ndim - 1)
                ) else None  # fmt: skip
            else:
                call = torch_calls.get((x.shape, x.stride(), x.dtype, device_index, ptr & 15, dim, variant))
                rows = None
        except (AttributeError, RuntimeError):  # not a torch tensor; a fake one (no data)
            call = rows = None
        if call is not None:
            run = call.dense_run
            if run is None or arrays.poisoning:
                return call.torch(x, ptr, device_index)
            y = empty_like(x)
            run(current_stream(device_index), ptr, y.data_ptr())
            return y
        if rows is not None and x.numel():
            y = empty_like(x)
            if arrays.poisoning:
                y.fill_(math.nan)
            rows(current_stream(device_index), ptr, y.data_ptr(), x.numel() // x.shape[-1])
            return y
    return _routed(x, dim, variant, out, batch_invariant)


def _routed(x, dim, variant, out, batch_invariant):
    """A torch tensor that needs autograd, or a fake one, through the torch op; else `run_softmax`."""
    if arrays.is_torch(x):
        from kernels_cuda import softmax_op

        if softmax_op.needs_op(x):
            return softmax_op.through_op(x, dim, variant, out, batch_invariant)
    return run_softmax(x, dim, variant, out, batch_invariant)


def run_softmax(x, dim, variant, out, batch_invariant=True):
    """The checked path: validates everything, then prepares (cached by layout) and runs."""
    fn = "kernels_cuda.softmax"
    ops = arrays.backend(x, fn)
    dtype = arrays.check_dtype(ops, x, fn, arrays.SOFTMAX_DTYPES)
    arrays.normalize_dim(dim, x.ndim, fn)
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise ValueError(f"{fn}: unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    if not isinstance(batch_invariant, bool):
        raise TypeError(f"{fn}: batch_invariant must be True or False, got {batch_invariant!r}")
    device_id = arrays.check_device(ops, x, fn)
    shape = tuple(x.shape)
    if out is not None:
        _check_out(ops, out, shape, dtype, device_id, fn)
    if x.ndim == 0:  # one element: softmax over a 1-element row
        y = run_softmax(
            ops.reshape(x, (1,)), 0, variant, None if out is None else ops.reshape(out, (1,)), batch_invariant
        )
        return out if out is not None else ops.reshape(y, ())
    x_ptr = ops.ptr(x)
    prepared = cached_prepare(
        shape,
        ops.strides(x),
        dtype,
        dim,
        variant,
        device_for(device_id),
        x_address=x_ptr % 16,
        out_strides=None if out is None else ops.strides(out),
        out_address=0 if out is None else ops.ptr(out) % 16,
        batch_invariant=batch_invariant,
    )
    if prepared.launch is None:
        return out if out is not None else ops.empty(shape, x)
    try:
        key = (prepared, ops.kind, device_id)
        call = prepared_calls.get(key)
        if call is None:
            call = prepared_calls[key] = _Call(prepared, ops, device_id)
        result = call(x, x_ptr, out)
    except Exception as exc:  # a cluster the device refused: planned again with at most 8 blocks
        if not device_props.refused(exc, device_id, prepared.launch.spec.cluster):
            raise
        return run_softmax(x, dim, variant, out, batch_invariant)
    if out is None and ops is arrays.TorchOps and dim.__class__ is int and batch_invariant is True:
        if max(len(torch_calls), len(prepared_calls), len(rows_calls)) >= MAX_CACHED_CALLS:
            torch_calls.clear()
            prepared_calls.clear()
            rows_calls.clear()
        torch_calls[_torch_key(x, x_ptr, dim, variant)] = call
        if call.dense_run is not None and x.is_contiguous():
            key = (prepared.N, x.dtype, x.get_device(), x_ptr & 15, variant)
            if key not in rows_calls:
                rows_calls[key] = RowsCall(prepared.rows, device_id, prepared.N)
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
