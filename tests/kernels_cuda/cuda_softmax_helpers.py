"""Inputs and checks shared by the kernels_cuda softmax tests: the dtypes, random inputs in
several layouts, and the comparison against labtools' float64 reference."""

from __future__ import annotations

import math

import numpy as np
import torch
from labtools.ops import softmax_ref, tolerance

TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def _randn(shape, dtype: str, scale: float) -> torch.Tensor:
    return (torch.randn(shape, device="cuda") * scale).to(TORCH_DTYPES[dtype])


def _make_input(layout: str, m: int, n: int, dtype: str, scale: float) -> tuple[torch.Tensor, int]:
    """An input with m rows of n along the returned dim, in one of several layouts."""
    if layout == "contiguous":
        return _randn((m, n), dtype, scale), -1
    if layout == "dim0":  # softmax over the outer dim: rows are strided, copied to rows first
        return _randn((n, m), dtype, scale), 0
    if layout == "middle":  # (a, n, b) along dim 1
        a = max(1, math.isqrt(m))
        return _randn((a, n, max(1, m // a)), dtype, scale), 1
    if layout == "sliced":  # rows of a wider array: row stride n + 5, no copy
        return _randn((m, n + 5), dtype, scale)[:, :n], -1
    if layout == "offset":  # starts one element in: never 16-byte aligned, element-wide accesses
        return _randn((m, n + 1), dtype, scale)[:, 1:], -1
    if layout == "broadcast":  # one row repeated: row stride 0
        return _randn((1, n), dtype, scale).expand(m, n), -1
    raise ValueError(layout)


def _f64(a) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.double().cpu().numpy()
    import cupy

    return cupy.asnumpy(a).astype(np.float64)


def _assert_softmax(y, x, dim: int, dtype: str) -> None:
    assert tuple(y.shape) == tuple(x.shape) and str(y.dtype).endswith(dtype)
    np.testing.assert_allclose(_f64(y), softmax_ref(_f64(x), axis=dim), **tolerance(dtype))
