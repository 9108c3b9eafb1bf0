"""The host side of softmax and vector_add without a GPU: layouts, dims, strides, out= and temporaries.

The kernel launch is replaced by a stand-in that reads the kernel's arguments exactly as the CUDA
code would (base pointers, M, N, row strides in elements) and computes rows with labtools'
float64 reference, over CPU torch tensors. So what is checked here is everything the wrapper
hands a kernel: which memory, which strides, and where the result ends up. The kernels
themselves are checked on a GPU (test_cuda_softmax.py).
"""

from __future__ import annotations

import ctypes
import math

import kernels_cuda
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from kernels_cuda import arrays, codegen
from kernels_cuda import softmax_variants as sm
from labtools.ops import softmax_ref, tolerance, vector_add_ref

NP_DTYPES = {"float32": np.float32, "float16": np.float16}


def _view(ptr: int, dtype: str, shape: tuple[int, int], row_stride: int) -> np.ndarray:
    """The (M, N) array a kernel sees at `ptr`."""
    m, n = shape
    count = (m - 1) * row_stride + n if m else 0
    item = np.dtype(NP_DTYPES[dtype]).itemsize
    flat = np.ctypeslib.as_array((ctypes.c_byte * (count * item)).from_address(ptr)).view(NP_DTYPES[dtype])
    return np.lib.stride_tricks.as_strided(flat, shape, (row_stride * item, item))


def _host_launch(spec, grid, block, args, *, stream, device_id, shared_mem=0):
    assert stream == "caller's stream" and device_id == 0
    if spec.kernel == "vector_add":
        a, b, c, n = (int(v) for v in args)
        cols = [_view(p, spec.dtype, (1, n), n) for p in (a, b, c)]
        cols[2][...] = vector_add_ref(cols[0], cols[1])
        return
    x, y, m, n, xs, ys = (int(v) for v in args[:6])
    assert isinstance(args[3], np.int32) and isinstance(args[2], np.int64)  # the kernels' int N, i64 M
    _view(y, spec.dtype, (m, n), ys)[...] = softmax_ref(_view(x, spec.dtype, (m, n), xs), axis=-1)


@pytest.fixture(autouse=True)
def host_launch(monkeypatch):
    monkeypatch.setattr(codegen, "launch", _host_launch)
    monkeypatch.setattr(arrays, "check_device", lambda ops, x, fn: 0)
    monkeypatch.setattr(arrays._TorchOps, "stream", staticmethod(lambda x: "caller's stream"))
    monkeypatch.setattr(sm, "_device", lambda device_id: sm.H100)


def _input(shape, dtype, layout):
    base = torch.randn(shape[:-1] + (shape[-1] + 3,)).to(getattr(torch, dtype))
    if layout == "sliced":
        return base[..., :-3]
    if layout == "offset":
        return base[..., 3:]
    if layout == "transposed":
        return base[..., :-3].transpose(0, -1)
    return base[..., :-3].contiguous()


@given(
    shape=st.lists(st.integers(1, 7), min_size=1, max_size=4).map(tuple),
    dim=st.integers(-4, 3),
    dtype=st.sampled_from(sorted(NP_DTYPES)),
    layout=st.sampled_from(["contiguous", "sliced", "offset", "transposed"]),
    with_out=st.sampled_from([None, "contiguous", "transposed"]),
    variant=st.sampled_from(sm.VARIANTS),
)
def test_softmax_reaches_every_element_through_any_layout(shape, dim, dtype, layout, with_out, variant):
    x = _input(shape, dtype, layout)
    if not -x.ndim <= dim < x.ndim:
        with pytest.raises(ValueError, match="out of range"):
            kernels_cuda.softmax(x, dim=dim, variant=variant)
        return
    with arrays.poison_outputs():
        if with_out is None:
            y = kernels_cuda.softmax(x, dim=dim, variant=variant)
        else:
            y = torch.full(x.shape, math.nan, dtype=x.dtype)
            y = y if with_out == "contiguous" else y.transpose(0, -1).contiguous().transpose(0, -1)
            assert kernels_cuda.softmax(x, dim=dim, variant=variant, out=y) is y
    assert y.shape == x.shape and y.dtype == x.dtype
    ref = softmax_ref(x.double().numpy(), axis=dim)
    np.testing.assert_allclose(y.double().numpy(), ref, **tolerance(dtype))


def test_inputs_that_are_already_rows_are_not_copied(monkeypatch):
    seen = []
    monkeypatch.setattr(
        sm, "_run", lambda variant, x, y, *a: seen.append((x.ptr, x.row_stride, y.row_stride))
    )
    base = torch.randn(6, 10)
    kernels_cuda.softmax(base[:, 2:7])  # rows of 5 inside rows of 10: zero-copy, stride 10
    kernels_cuda.softmax(base[1].expand(4, 10))  # one row broadcast: zero-copy, stride 0
    assert seen == [(base.data_ptr() + 2 * 4, 10, 5), (base.data_ptr() + 10 * 4, 0, 10)]


def test_a_zero_d_input_and_empty_inputs():
    assert kernels_cuda.softmax(torch.tensor(2.5)).item() == 1.0
    assert kernels_cuda.softmax(torch.tensor(2.5), dim=-1).shape == ()
    for shape in [(0,), (3, 0), (0, 4), (2, 0, 5)]:
        assert kernels_cuda.softmax(torch.randn(shape), dim=0).shape == shape


def test_out_must_match():
    x = torch.randn(3, 4)
    with pytest.raises(ValueError, match="out has shape"):
        kernels_cuda.softmax(x, out=torch.empty(4, 3))
    with pytest.raises(ValueError, match="out has shape"):
        kernels_cuda.softmax(x, out=torch.empty(3, 4, dtype=torch.float16))


@given(
    n=st.integers(0, 300), dtype=st.sampled_from(sorted(NP_DTYPES)), strided=st.booleans(), out=st.booleans()
)
def test_vector_add_through_any_layout(n, dtype, strided, out):
    a = torch.randn(2 * n).to(getattr(torch, dtype))
    a = a[::2] if strided else a[:n]
    b = torch.randn(n).to(getattr(torch, dtype))
    target = torch.full((2 * n,), math.nan, dtype=a.dtype)[::2] if out else None
    with arrays.poison_outputs():
        c = kernels_cuda.vector_add(a, b, out=target)
    assert c.shape == (n,) and (target is None or c is target)
    np.testing.assert_allclose(c.double().numpy(), vector_add_ref(a.numpy(), b.numpy()), **tolerance(dtype))
