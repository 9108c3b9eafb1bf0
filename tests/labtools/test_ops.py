"""The NumPy references and cost models every kernel is checked and measured against."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from labtools.ops import OPS, SOFTMAX, SOFTMAX_BACKWARD, get_op, softmax_backward_ref, softmax_ref, tolerance


@given(m=st.integers(1, 8), n=st.integers(1, 300), seed=st.integers(0, 2**31 - 1), scale=st.floats(0.1, 50))
def test_softmax_ref_rows_are_distributions(m, n, seed, scale):
    x = np.random.default_rng(seed).standard_normal((m, n)) * scale
    y = softmax_ref(x)
    assert y.dtype == np.float64
    assert np.all(y >= 0)
    np.testing.assert_allclose(y.sum(-1), 1.0, rtol=1e-12)
    # invariant to a per-row shift, and ordered like its input
    np.testing.assert_allclose(softmax_ref(x + 123.0), y, rtol=1e-10, atol=1e-300)
    assert np.array_equal(np.argmax(y, -1), np.argmax(x, -1))


def test_softmax_ref_matches_closed_form_and_torch_semantics():
    x = np.array([[0.0, np.log(3.0)], [-np.inf, 0.0], [-np.inf, -np.inf]])
    y = softmax_ref(x)
    np.testing.assert_allclose(y[0], [0.25, 0.75])
    np.testing.assert_array_equal(y[1], [0.0, 1.0])
    assert np.isnan(y[2]).all()  # a row of all -inf is NaN, as in torch
    assert softmax_ref(np.zeros((0, 5))).shape == (0, 5)


@given(n=st.integers(2, 50), seed=st.integers(0, 2**31 - 1))
def test_softmax_backward_ref_is_the_jacobian_product(n, seed):
    rng = np.random.default_rng(seed)
    x, dy = rng.standard_normal(n), rng.standard_normal(n)
    y = softmax_ref(x)
    jac = np.diag(y) - np.outer(y, y)
    np.testing.assert_allclose(softmax_backward_ref(y, dy), jac @ dy, rtol=1e-10, atol=1e-14)


def test_cost_models():
    assert SOFTMAX.bytes_moved((4096, 600), 4) == 2 * 4096 * 600 * 4
    assert SOFTMAX.flops((10, 10)) == 500
    assert SOFTMAX_BACKWARD.bytes_moved((2, 3), 2) == 36
    assert SOFTMAX.intensity((1, 1000), 4) == pytest.approx(5 / 8)
    assert set(OPS) >= {"softmax", "softmax_backward", "vector_add", "copy"}
    with pytest.raises(ValueError, match="unknown op"):
        get_op("matmul2")


def test_tolerances_are_stated_for_every_storage_dtype():
    for name in ("float32", "float16", "bfloat16", "torch.bfloat16", np.dtype("float32")):
        assert tolerance(name)["rtol"] > 0
    with pytest.raises(ValueError):
        tolerance("int8")
