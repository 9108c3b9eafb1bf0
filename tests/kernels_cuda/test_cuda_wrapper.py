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
from kernels_cuda import softmax_variants as variants
from labtools.ops import softmax_ref, tolerance, vector_add_ref

NP_DTYPES = {"float32": np.float32, "float16": np.float16}
CALLERS_STREAM = 0xC0FFEE  # the CUstream handle the stand-in expects every launch on


def _view(ptr: int, dtype: str, shape: tuple[int, int], row_stride: int) -> np.ndarray:
    """The (M, N) array a kernel sees at `ptr`."""
    m, n = shape
    count = (m - 1) * row_stride + n if m else 0
    item = np.dtype(NP_DTYPES[dtype]).itemsize
    flat = np.ctypeslib.as_array((ctypes.c_byte * (count * item)).from_address(ptr)).view(NP_DTYPES[dtype])
    return np.lib.stride_tricks.as_strided(flat, shape, (row_stride * item, item))


class _HostLaunch:
    """Stands in for codegen.packed's PackedLaunch: computes what the kernel would, from the
    arguments exactly as packed (leading pointers given per call), over CPU memory."""

    calls: list = []

    def __init__(self, spec, device_id, grid, block, shared_mem, types, values):
        assert device_id == 0
        self.spec, self.types, self.values = spec, types, list(values)

    def __call__(self, stream, *pointers):
        assert stream == CALLERS_STREAM
        args = [*pointers, *self.values[len(pointers) :]]
        _HostLaunch.calls.append(tuple(args))
        if self.spec.kernel == "vector_add":
            a, b, c, n = (int(v) for v in args)
            cols = [_view(p, self.spec.dtype, (1, n), n) for p in (a, b, c)]
            cols[2][...] = vector_add_ref(cols[0], cols[1])
            return
        x, y, m, n, xs, ys = (int(v) for v in args[:6])
        assert self.types[3] is ctypes.c_int32 and self.types[2] is ctypes.c_int64  # int N, i64 M
        _view(y, self.spec.dtype, (m, n), ys)[...] = softmax_ref(
            _view(x, self.spec.dtype, (m, n), xs), axis=-1
        )

    two = __call__

    def rows(self, stream, grid, m_slot, M, *pointers):
        self.values[m_slot] = M
        self(stream, *pointers)


@pytest.fixture(autouse=True)
def host_launch(monkeypatch):
    monkeypatch.setattr(codegen, "packed", _HostLaunch)
    monkeypatch.setattr(arrays, "check_device", lambda ops, x, fn: 0)
    monkeypatch.setattr(arrays.TorchOps, "stream", staticmethod(lambda x: CALLERS_STREAM))
    monkeypatch.setattr(arrays, "_torch_stream", lambda device_index: CALLERS_STREAM)
    monkeypatch.setattr(variants, "current_stream", lambda device_index: CALLERS_STREAM)
    monkeypatch.setattr(variants, "device_for", lambda device_id: variants.H100)
    variants.clear_caches()  # cached calls hold the stand-in: none outlives this test
    _HostLaunch.calls = []
    yield
    variants.clear_caches()


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
    variant=st.sampled_from(variants.VARIANTS),
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


def test_inputs_that_are_already_rows_are_not_copied():
    base = torch.randn(6, 10)
    kernels_cuda.softmax(base[:, 2:7])  # rows of 5 inside rows of 10: zero-copy, stride 10
    kernels_cuda.softmax(base[1].expand(4, 10))  # one row broadcast: zero-copy, stride 0
    seen = [(x, xs, ys) for x, _, _, _, xs, ys, *_ in _HostLaunch.calls]
    assert seen == [(base.data_ptr() + 2 * 4, 10, 5), (base.data_ptr() + 10 * 4, 0, 10)]


def test_a_layout_seen_before_skips_the_checks_and_reuses_the_packed_launch(monkeypatch):
    x = torch.randn(8, 600)
    first = kernels_cuda.softmax(x)
    monkeypatch.setattr(variants, "run_softmax", None)  # any call that is not served from the cache fails
    again = kernels_cuda.softmax(x.clone())
    assert torch.equal(first, again) and len(_HostLaunch.calls) == 2
    assert _HostLaunch.calls[0][2:] == _HostLaunch.calls[1][2:]  # same M, N, strides
    with pytest.raises(TypeError):  # dim=True equals 1 as a key, but is never served from the cache
        kernels_cuda.softmax(x, dim=True)
    with pytest.raises(TypeError):  # another layout, dtype or variant is a miss: the checked path
        kernels_cuda.softmax(x.half())


def test_contiguous_and_strided_inputs_of_one_shape_get_their_own_cached_calls():
    """A contiguous input's key leaves its strides out; a strided view of the same shape must
    still get its own call (its row stride), and a contiguous one with other strides on size-1
    dims may share the contiguous call."""
    x = torch.randn(4, 5)
    kernels_cuda.softmax(x)
    wide = torch.randn(4, 8)
    y = kernels_cuda.softmax(wide[:, :5])  # same shape and dtype, rows 8 apart
    np.testing.assert_allclose(y.double().numpy(), softmax_ref(wide[:, :5].double().numpy(), axis=-1), 1e-6)
    assert [xs for _, _, _, _, xs, *_ in _HostLaunch.calls] == [5, 8]
    ones = torch.randn(1, 5).as_strided((1, 5), (99, 1))  # contiguous to torch: size-1 dim's stride
    assert ones.is_contiguous()
    ys = [kernels_cuda.softmax(t) for t in (torch.randn(1, 5), ones)]
    np.testing.assert_allclose(ys[1].double().numpy(), softmax_ref(ones.double().numpy(), axis=-1), 1e-6)
    # the (1, 5) inputs are dense rows of 5 as (4, 5) was: its row plan's launch serves them
    assert len(variants.torch_calls) == 2 and len(variants.rows_calls) == 1
    assert all(s.shape == (1, 5) for s in ys)


def test_a_bool_dim_is_refused_even_where_an_int_dim_was_cached():
    x = torch.randn(4, 5)
    kernels_cuda.softmax(x, dim=1)
    for dim in (True, False):
        with pytest.raises(TypeError, match="dim must be an int, got bool"):
            kernels_cuda.softmax(x, dim=dim)


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
