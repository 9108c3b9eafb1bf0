"""The caller's arrays, zero-copy: CuPy arrays and torch CUDA tensors as raw device pointers.

Kernels get `data_ptr()` / `.data.ptr` and element strides; nothing is copied unless the layout
asks for it (a softmax dim that is not the innermost, or leading dims that do not collapse into
one row stride). Launches go on the caller's current stream, as a raw CUstream handle: torch's
current stream of the tensor's device, or CuPy's current stream.

Each checker raises TypeError or ValueError naming the problem, and checks run in an order that
needs no GPU until the last one (kind, dtype, dim, then device), so bad input is caught the same
way on a CPU-only machine.

`poison_outputs()` makes every output this package allocates start as NaN, so a test can see an
element no kernel wrote.
"""

from __future__ import annotations

import contextlib
import math
import operator
from dataclasses import dataclass
from typing import Any

SUPPORTED_DTYPES = ("float32", "float16", "bfloat16")  # the packed kernels' (vector_add, 01-07)
SOFTMAX_DTYPES = (*SUPPORTED_DTYPES, "float64")  # softmax and its backward (float64: 08)
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}

poisoning = False


@contextlib.contextmanager
def poison_outputs():
    """Within this block, outputs allocated here are NaN-filled before any kernel runs."""
    global poisoning
    old, poisoning = poisoning, True
    try:
        yield
    finally:
        poisoning = old


def is_torch(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def _is_cupy(x) -> bool:
    return type(x).__module__.startswith("cupy") and hasattr(x, "data") and hasattr(x, "strides")


class TorchOps:
    """torch tensors: strides are in elements already."""

    kind = "torch"

    @staticmethod
    def dtype(x) -> str:
        return str(x.dtype).removeprefix("torch.")

    @staticmethod
    def on_cuda(x) -> bool:
        return x.is_cuda

    @staticmethod
    def device_id(x) -> int:
        return x.device.index

    @staticmethod
    def ptr(x) -> int:
        return x.data_ptr()

    @staticmethod
    def strides(x) -> tuple[int, ...]:
        return tuple(x.stride())

    @staticmethod
    def moveaxis(x, src: int, dst: int):
        return x.movedim(src, dst)

    @staticmethod
    def as_strided(x, shape, strides):
        return x.as_strided(shape, strides)

    @staticmethod
    def contiguous(x):
        return x.contiguous()

    @staticmethod
    def reshape(x, shape):
        return x.reshape(shape)

    @staticmethod
    def empty(shape, like):
        out = like.new_empty(shape)  # like's dtype and device; never requires grad
        return out.fill_(math.nan) if poisoning else out

    @staticmethod
    def copy_(dst, src) -> None:
        dst.copy_(src)

    @staticmethod
    def stream(x) -> int:
        return _torch_stream(x.get_device())


class _CupyOps:
    """CuPy arrays: strides are in bytes; converted to elements here."""

    kind = "cupy"

    @staticmethod
    def dtype(x) -> str:
        return str(x.dtype)

    @staticmethod
    def on_cuda(x) -> bool:
        return True

    @staticmethod
    def device_id(x) -> int:
        return x.device.id

    @staticmethod
    def ptr(x) -> int:
        return x.data.ptr

    @staticmethod
    def strides(x) -> tuple[int, ...]:
        return tuple(s // x.itemsize for s in x.strides)

    @staticmethod
    def moveaxis(x, src: int, dst: int):
        import cupy

        return cupy.moveaxis(x, src, dst)

    @staticmethod
    def as_strided(x, shape, strides):
        import cupy

        return cupy.lib.stride_tricks.as_strided(x, shape, tuple(s * x.itemsize for s in strides))

    @staticmethod
    def contiguous(x):
        import cupy

        return cupy.ascontiguousarray(x)

    @staticmethod
    def reshape(x, shape):
        return x.reshape(shape)

    @staticmethod
    def empty(shape, like):
        import cupy

        with like.device:
            out = cupy.empty(shape, dtype=like.dtype)
            if poisoning:
                out.fill(math.nan)
        return out

    @staticmethod
    def copy_(dst, src) -> None:
        dst[...] = src

    @staticmethod
    def stream(x) -> int:
        import cupy

        with x.device:
            return cupy.cuda.get_current_stream().ptr


_raw_stream = None


def torch_stream_getter():
    """device index -> torch's current stream on that device, as a CUstream handle (the private
    getter skips building a torch.cuda.Stream object; the public API is the fallback)."""
    global _raw_stream
    if _raw_stream is None:
        import torch

        _raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
            lambda i: torch.cuda.current_stream(i).cuda_stream
        )
    return _raw_stream


def _torch_stream(device_index: int) -> int:
    return torch_stream_getter()(device_index)


def backend(x, fn: str):
    """The ops for x's library; TypeError for anything but a CuPy array or a torch tensor."""
    if is_torch(x):
        return TorchOps
    if _is_cupy(x):
        return _CupyOps
    what = (
        "a NumPy array (host memory)" if type(x).__module__.startswith("numpy") else f"a {type(x).__name__}"
    )
    raise TypeError(f"{fn}: expected a CuPy array or a torch CUDA tensor, got {what}")


def check_dtype(ops, x, fn: str, allowed: tuple[str, ...] = SUPPORTED_DTYPES) -> str:
    dtype = ops.dtype(x)
    if dtype not in allowed:
        raise TypeError(f"{fn}: unsupported dtype {dtype}; supported: {', '.join(allowed)}")
    return dtype


def check_device(ops, x, fn: str) -> int:
    if not ops.on_cuda(x):
        raise TypeError(f"{fn}: the tensor is on {x.device}, not a CUDA device; move it with .cuda()")
    return ops.device_id(x)


def normalize_dim(dim, ndim: int, fn: str) -> int:
    """dim in [-ndim, ndim) -> [0, ndim); a 0-d input counts as 1-d, as in torch. A bool is not
    a dim (torch and Triton refuse it too), though Python counts it as an int."""
    if isinstance(dim, bool):
        raise TypeError(f"{fn}: dim must be an int, got bool")
    try:
        d = operator.index(dim)
    except TypeError:
        raise TypeError(f"{fn}: dim must be an int, got {type(dim).__name__}") from None
    n = max(ndim, 1)
    if not -n <= d < n:
        raise ValueError(f"{fn}: dim {dim} is out of range for a {ndim}-d input (expected {-n} <= dim < {n})")
    return d % n


@dataclass(frozen=True)
class Rows:
    """A (M, N) view with unit element stride: what every softmax kernel reads or writes."""

    array: Any  # the native 2-D view
    M: int
    N: int
    ptr: int
    row_stride: int  # elements


def row_stride(shape: tuple[int, ...], strides: tuple[int, ...]) -> int | None:
    """The stride between consecutive rows if (..., N) with unit stride along N collapses into
    (M, N) without a copy, else None. Size-1 dims impose nothing."""
    *lead, n = shape
    if n > 1 and strides[-1] != 1:
        return None
    step, expected = None, None  # stride of the innermost non-trivial leading dim, then outward
    for size, stride in zip(reversed(lead), reversed(strides[:-1])):
        if size == 1:
            continue
        if step is None:
            step, expected = stride, stride * size
        elif stride != expected:
            return None
        else:
            expected = stride * size
    return n if step is None else step


def is_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def as_rows(ops, x) -> Rows:
    """x (..., N) as rows, zero-copy when the layout allows it, else from a contiguous copy."""
    shape = tuple(x.shape)
    n = shape[-1]
    m = math.prod(shape[:-1])
    stride = row_stride(shape, ops.strides(x))
    if stride is None:
        x = ops.contiguous(x)
        stride = n
    view = ops.as_strided(x, (m, n), (stride, 1))
    return Rows(view, m, n, ops.ptr(view), stride)
