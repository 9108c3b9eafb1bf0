"""float64 through kernels_triton.softmax, forward and backward: within 1e-12 of a float64
reference (NumPy's), adversarial rows as torch has them, and gradcheck. Small shapes under the
interpreter; larger ones, and the layouts a GPU user passes, on the GPU."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from kernels_triton import softmax, softmax_, softmax_backward
from labtools.ops import softmax_backward_ref, softmax_ref
from triton_helpers import DEVICE

ATOL = 1e-12


def adversarial(m: int, n: int, seed: int) -> torch.Tensor:
    """Normal rows at several scales, and rows whose max is first, last or repeated, of huge
    magnitudes, with -inf entries, all -inf, +inf and NaN."""
    g = torch.Generator().manual_seed(seed)
    x = (
        torch.randn(m, n, generator=g, dtype=torch.float64)
        * torch.logspace(-2, 2, m, dtype=torch.float64)[:, None]
    )
    specials = [
        lambda r: r.__setitem__(0, 50.0),
        lambda r: r.__setitem__(-1, 50.0),
        lambda r: r.__setitem__(slice(None, None, 2), 7.0),
        lambda r: r.mul_(1e300),
        lambda r: r.__setitem__(slice(1, None, 3), -math.inf),
        lambda r: r.fill_(-math.inf),
        lambda r: r.__setitem__(n // 2, math.inf),
        lambda r: r.__setitem__(n // 3, math.nan),
    ]
    for row, special in zip(x, specials, strict=False):
        special(row)
    return x.to(DEVICE)


def check_forward(x: torch.Tensor) -> torch.Tensor:
    y = softmax(x)
    expected = softmax_ref(x.cpu().numpy())
    assert y.dtype == torch.float64
    np.testing.assert_allclose(y.cpu().numpy(), expected, rtol=0, atol=ATOL)  # NaN where torch has NaN
    np.testing.assert_array_equal(np.isnan(y.cpu().numpy()), np.isnan(torch.softmax(x, -1).cpu().numpy()))
    return y


@pytest.mark.parametrize("n", [1, 3, 37, 1024, 1500])
def test_forward_and_backward_within_1e12(n):
    m = 9
    x = adversarial(m, n, n)
    y = check_forward(x)
    finite = y.isfinite().all(-1)
    y, x = y[finite], x[finite]
    dy = torch.randn(y.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(n)).to(DEVICE)
    dx = softmax_backward(y, dy)
    expected = softmax_backward_ref(y.cpu().numpy(), dy.cpu().numpy())
    np.testing.assert_allclose(dx.cpu().numpy(), expected, rtol=0, atol=ATOL)
    assert torch.equal(softmax_(x.clone()), softmax(x))


def test_any_dim_and_layout():
    x = torch.randn(3, 5, 7, dtype=torch.float64, device=DEVICE)
    for dim in (0, 1, 2, -1):
        np.testing.assert_allclose(
            softmax(x, dim).cpu().numpy(), softmax_ref(x.cpu().numpy(), dim), rtol=0, atol=ATOL
        )
    t = x.transpose(0, 2)
    np.testing.assert_allclose(softmax(t).cpu().numpy(), softmax_ref(t.cpu().numpy()), rtol=0, atol=ATOL)


def test_gradcheck():
    # fast_mode: a few random directions, not the whole Jacobian (interpreted launches are slow)
    for shape, dim in (((2, 5), -1), ((3, 4, 2), 1)):
        x = torch.randn(shape, dtype=torch.float64, device=DEVICE, requires_grad=True)
        assert torch.autograd.gradcheck(lambda t, d=dim: softmax(t, d), (x,), fast_mode=True)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(64, 600), (16, 50257), (4, 300000), (4096, 1024)])
def test_gpu_float64_at_long_and_many_rows(shape):
    m, n = shape
    g = torch.Generator(device="cuda").manual_seed(m + n)
    x = torch.randn(shape, generator=g, device="cuda", dtype=torch.float64) * 20
    x[0, 0] = 1e300
    x[1, :] = -math.inf
    check_forward(x)
    y = softmax(x[2:])
    dy = torch.randn(y.shape, generator=g, device="cuda", dtype=torch.float64)
    expected = softmax_backward_ref(y.cpu().numpy(), dy.cpu().numpy())
    np.testing.assert_allclose(softmax_backward(y, dy).cpu().numpy(), expected, rtol=0, atol=ATOL)


@pytest.mark.gpu
def test_gpu_gradcheck_at_a_long_row():
    x = torch.randn(3, 4000, dtype=torch.float64, device="cuda", requires_grad=True)
    dy = torch.randn_like(x)
    (g,) = torch.autograd.grad(softmax(x), x, dy)
    (want,) = torch.autograd.grad(torch.softmax(x, -1), x, dy)
    torch.testing.assert_close(g, want, rtol=0, atol=ATOL)
    small = torch.randn(4, 33, dtype=torch.float64, device="cuda", requires_grad=True)
    assert torch.autograd.gradcheck(softmax, (small,))
