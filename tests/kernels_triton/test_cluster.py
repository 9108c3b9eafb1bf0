"""The softmax backward over thread-block clusters (kernels_triton.cluster) against float64.

kernels_triton's backward takes it on sm_90 for rows of 32768 to 131072 elements, in launches of
at least cluster.MIN_BYTES. The kernel itself (launch.cluster_plan) is tested at any size: whole
8192-element chunks and a ragged last one (odd N), one row and many, 16-byte aligned rows and
not, strided rows, every dtype, and non-finite values, which must come out where torch's
backward puts them. Outputs are filled with NaN before each launch, so an element no block
writes fails. On a CPU the kernel never runs (cluster.applies is False there: the interpreter has
no clusters), which the first test checks.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from kernels_triton import cluster, launch
from labtools.ops import softmax_backward_ref, tolerance

SM90 = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
needs_sm90 = pytest.mark.skipif(
    not SM90, reason="needs an sm_90 GPU (thread-block clusters of up to 16 blocks)"
)
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def backward_poisoned(y: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor | None = None) -> torch.Tensor:
    dx = torch.empty_like(y) if dx is None else dx
    dx.fill_(math.nan)
    launch.cluster_plan([y, dy, dx], *y.shape)
    return dx


def inputs(m: int, n: int, dtype: torch.dtype, seed: int, pad: int = 0):
    """y = softmax of scaled normals and dy normals, as (m, n) views of (m, n + pad) buffers at
    column offset pad (pad > 0: row strides past N, and row starts off 16-byte boundaries)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    y = torch.empty((m, n + pad), dtype=dtype, device="cuda")[:, pad:]
    y.copy_(torch.softmax(torch.randn((m, n), generator=g, device="cuda") * 3, -1))
    dy = torch.randn((m, n + pad), generator=g, device="cuda").to(dtype)[:, pad:]
    return y, dy


def reference(y: torch.Tensor, dy: torch.Tensor) -> np.ndarray:
    return softmax_backward_ref(y.cpu().double().numpy(), dy.cpu().double().numpy())


def test_never_on_a_cpu():
    for n in (cluster.MIN_COLS, cluster.MAX_COLS):
        assert not cluster.applies(4, n, torch.float32, torch.device("cpu"))


@pytest.mark.gpu
@needs_sm90
def test_the_backward_takes_the_cluster_kernel_from_32768_to_131072_columns_in_large_launches(monkeypatch):
    cuda = torch.device("cuda")
    for n, taken in (
        (16384, False),
        (32767, False),
        (32768, True),
        (50257, True),
        (131072, True),
        (131073, False),
    ):
        assert cluster.applies(1024, n, torch.bfloat16, cuda) == taken, n
    rows = cluster.MIN_BYTES // (3 * 4 * 40000) + 1  # fp32 rows of 40000: just past MIN_BYTES
    assert cluster.applies(rows, 40000, torch.float32, cuda)
    assert not cluster.applies(rows - 1, 40000, torch.float32, cuda)
    planned = []
    compiled_backward = cluster.compiled_backward
    monkeypatch.setattr(cluster, "compiled_backward", lambda ts: planned.append(ts) or compiled_backward(ts))
    y, dy = inputs(rows, 40000, torch.float32, 0)
    dx = torch.full_like(y, math.nan)
    launch.launch("softmax_bwd", [y, dy, dx], *y.shape)
    assert len(planned) == 1
    np.testing.assert_allclose(dx.cpu().double().numpy(), reference(y, dy), **tolerance(torch.float32))


@pytest.mark.gpu
@needs_sm90
@given(
    m=st.sampled_from([1, 2, 3, 7, 64]),
    n=st.sampled_from([32768, 40000, 50257, 65536, 98304 + 5, 131072]),
    dtype=st.sampled_from(DTYPES),
    pad=st.sampled_from([0, 3, 8]),
    seed=st.integers(0, 2**31 - 1),
)
def test_matches_float64(m, n, dtype, pad, seed):
    y, dy = inputs(m, n, dtype, seed, pad)
    dx = backward_poisoned(y, dy, torch.empty((m, n + pad), dtype=dtype, device="cuda")[:, pad:])
    np.testing.assert_allclose(dx.cpu().double().numpy(), reference(y, dy), **tolerance(dtype))


@pytest.mark.gpu
@needs_sm90
def test_error_no_worse_than_torch_on_many_rows():
    """Error against float64 at most torch's own backward's on the same input (plus an ulp of
    the largest output: the order of summation differs), fp32, every chunk of a 16-block row."""
    y, dy = inputs(64, 131072, torch.float32, 11)
    expected = reference(y, dy)
    ours = backward_poisoned(y, dy).cpu().double().numpy()
    torch_dx = torch._softmax_backward_data(dy, y, -1, torch.float32).cpu().double().numpy()
    ulp = float(np.spacing(np.float32(np.abs(expected).max())))
    err, torch_err = np.abs(ours - expected).max(), np.abs(torch_dx - expected).max()
    assert err <= max(torch_err, 4 * ulp), (err, torch_err, ulp)


@pytest.mark.gpu
@needs_sm90
@pytest.mark.parametrize("dtype", DTYPES)
def test_non_finite_values_come_out_as_in_torch(dtype):
    """NaN or inf in dy (y, a softmax output, is finite) makes a row's dot product non-finite;
    every element of that row comes out as torch's backward has it."""
    y, dy = inputs(4, 70000, dtype, 3)
    dy[0, 123] = math.nan
    dy[1, 69999] = math.inf
    dy[2, 8191] = -math.inf
    dx = backward_poisoned(y, dy)
    expected = torch._softmax_backward_data(dy.float(), y.float(), -1, torch.float32)
    torch.testing.assert_close(dx.float(), expected, equal_nan=True, **tolerance(dtype))
    assert dx[3].isfinite().all()
