"""kernels_cuda.vector_add on a GPU against the float64 reference (torch and CuPy, poisoned outputs)."""

from __future__ import annotations

import kernels_cuda
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from kernels_cuda import arrays
from labtools.ops import tolerance

pytestmark = pytest.mark.gpu

TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def _randn(shape, dtype: str, scale: float) -> torch.Tensor:
    return (torch.randn(shape, device="cuda") * scale).to(TORCH_DTYPES[dtype])


@given(n=st.integers(0, 1 << 20), dtype=st.sampled_from(sorted(TORCH_DTYPES)), strided=st.booleans())
def test_vector_add_matches_the_float64_reference(n, dtype, strided):
    from labtools.ops import vector_add_ref

    a, b = _randn((2 * n if strided else n,), dtype, 5.0), _randn((n,), dtype, 5.0)
    a = a[::2] if strided else a
    with arrays.poison_outputs():
        c = kernels_cuda.vector_add(a, b)
    assert c.shape == (n,) and c.dtype == a.dtype
    ref = vector_add_ref(a.double().cpu().numpy(), b.double().cpu().numpy())
    np.testing.assert_allclose(c.double().cpu().numpy(), ref, **tolerance(dtype))


def test_vector_add_on_cupy_with_a_poisoned_out():
    cupy = pytest.importorskip("cupy")
    a, b = (
        cupy.random.standard_normal(100_003).astype(cupy.float16),
        cupy.random.standard_normal(100_003).astype(cupy.float16),
    )
    out = cupy.full(100_003, cupy.nan, dtype=cupy.float16)
    assert kernels_cuda.vector_add(a, b, out=out) is out
    np.testing.assert_allclose(
        cupy.asnumpy(out).astype(np.float64),
        cupy.asnumpy(a).astype(np.float64) + cupy.asnumpy(b),
        **tolerance("float16"),
    )
