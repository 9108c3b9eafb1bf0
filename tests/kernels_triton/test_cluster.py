"""The softmax forward and backward over thread-block clusters (kernels_triton.cluster) against
float64.

kernels_triton takes them on sm_90 for rows of 32768 to 262144 elements, both directions at any
row count.
The kernels themselves (launch.cluster_template, launched once) are tested at any size: whole chunks and a ragged
last one, both block widths (8192 and 16384 elements), rows off 16-byte boundaries (odd N: head,
body and tail), one row and many, strided rows, every dtype, and non-finite and huge values,
which must come out where torch puts them.
Outputs are filled with NaN before each launch, so an element no block writes fails. On a CPU the
kernels never run (the interpreter has no clusters), which the first test checks. Which rows take
the cluster and with what launch: test_cluster_routes.py; the kernels compiled for sm_90 without a
GPU (their inline PTX and the registers their blocks are sized by): test_cluster_sass.py.
"""

import math

import numpy as np
import pytest
import torch
from cluster_helpers import DTYPES, backward_poisoned, forward_poisoned, inputs, needs_sm90, reference
from hypothesis import given
from hypothesis import strategies as st
from kernels_triton import cluster
from labtools.ops import softmax_ref, tolerance


def test_never_on_a_cpu():
    for direction in ("fwd", "bwd"):
        for n in (cluster.MIN_COLS, cluster.MAX_COLS):
            assert not cluster.applies(direction, 1024, n, torch.float32, torch.device("cpu"))


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
@pytest.mark.parametrize("n", [131072, 151936])  # one tile a block; two (cluster.tiles)
def test_error_no_worse_than_torch_on_many_rows(n):
    """Error against float64 at most torch's own backward's on the same input (plus an ulp of
    the largest output: the order of summation differs), fp32, every chunk of a 16-block row."""
    y, dy = inputs(64, n, torch.float32, 11)
    expected = reference(y, dy)
    ours = backward_poisoned(y, dy).cpu().double().numpy()
    torch_dx = torch._softmax_backward_data(dy, y, -1, torch.float32).cpu().double().numpy()
    ulp = float(np.spacing(np.float32(np.abs(expected).max())))
    err, torch_err = np.abs(ours - expected).max(), np.abs(torch_dx - expected).max()
    assert err <= max(torch_err, 4 * ulp), (err, torch_err, ulp)


@pytest.mark.gpu
@needs_sm90
@pytest.mark.parametrize("n", [70000, 70001])  # 16-byte aligned rows; rows with a head and a tail
@pytest.mark.parametrize("dtype", DTYPES)
def test_non_finite_values_come_out_as_in_torch(dtype, n):
    """NaN or inf in dy (y, a softmax output, is finite) makes a row's dot product non-finite;
    every element of that row comes out as torch's backward has it."""
    y, dy = inputs(4, n, dtype, 3)
    dy[0, 123] = math.nan
    dy[1, n - 1] = math.inf  # with n = 70001: in the tail
    dy[2, 8191] = -math.inf
    dx = backward_poisoned(y, dy)
    expected = torch._softmax_backward_data(dy.float(), y.float(), -1, torch.float32)
    torch.testing.assert_close(dx.float(), expected, equal_nan=True, **tolerance(dtype))
    assert dx[3].isfinite().all()


@pytest.mark.gpu
@needs_sm90
@pytest.mark.parametrize("n", [131073, 151936, 163839, 163840, 163841, 200000, 262144])
@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_past_131072_in_blocks_of_16384(dtype, n):
    """Rows of 131073 to 262144 columns, both directions: the 16-bit backward, the backward of rows off 16-byte
    boundaries and, past 163840, the forward over 16 blocks of 16384 elements with capped registers (the
    16-bit forward over 4 warps, the others over 8), the last blocks partly or wholly past the row's end; up
    to 163840 the forward, and to 262144 the fp32 backward of whole packs, over two tiles a block
    (cluster.tiles; past 163840 dy read again after the exchange); rows off 16-byte boundaries (131073,
    163839) included."""
    warps = 4 if dtype != torch.float32 else 8
    meta = cluster.kernel_for("fwd", n, dtype)[1]
    two = cluster.tiles(n, dtype)
    assert (meta["C"], meta["CHUNK"], meta["CHUNK2"]) == (two[:3] if two else (16, 16384, 0))
    vec = cluster.packs([torch.empty((1, n), dtype=dtype, device="meta")])
    meta = cluster.kernel_for("bwd", n, dtype, vec)[1]
    two_bwd = cluster.tiles(n, dtype, True) if dtype == torch.float32 and not vec else None
    assert meta["RELOAD"] == (two_bwd is not None and two_bwd[2] > cluster.TWO_TILES[True][4])
    assert (meta["C"], meta["CHUNK"], meta["CHUNK2"]) == (two_bwd[:3] if two_bwd else (16, 16384, 0))
    assert (two is None) == (n > 163840) and cluster.block(n, "fwd", dtype)[:2] == (16384, warps)
    x = (torch.randn((3, n), device="cuda") * 4).to(dtype)
    x[0, 0], x[1, -1], x[2, ::9000] = 30, 30, 30
    np.testing.assert_allclose(
        forward_poisoned(x).cpu().double().numpy(), softmax_ref(x.cpu().double().numpy()), **tolerance(dtype)
    )
    y, dy = inputs(3, n, dtype, n)
    np.testing.assert_allclose(
        backward_poisoned(y, dy).cpu().double().numpy(), reference(y, dy), **tolerance(dtype)
    )


@pytest.mark.gpu
@needs_sm90
@given(
    m=st.sampled_from([1, 2, 3, 7, 16]),
    n=st.sampled_from([32768, 32776, 40000, 50257, 65536, 98304 + 5, 131072, 131073, 147457, 163840]),
    dtype=st.sampled_from(DTYPES),
    pad=st.sampled_from([0, 3, 8]),
    seed=st.integers(0, 2**31 - 1),
)
def test_forward_matches_float64(m, n, dtype, pad, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn((m, n + pad), generator=g, device="cuda") * 4).to(dtype)[:, pad:]
    y = forward_poisoned(x, torch.empty((m, n + pad), dtype=dtype, device="cuda")[:, pad:])
    np.testing.assert_allclose(
        y.cpu().double().numpy(), softmax_ref(x.cpu().double().numpy()), **tolerance(dtype)
    )


@pytest.mark.gpu
@needs_sm90
# 16-byte aligned rows; rows with a head and a tail; two tiles a block; past 163840 (16384-element blocks)
@pytest.mark.parametrize("n", [70000, 70001, 151936, 151937, 200001])
@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_adversarial_rows_come_out_as_in_torch(dtype, n):
    """Rows whose maximum is first, last or repeated, huge finite magnitudes (up to the dtype's
    largest), a chunk of all -inf, and rows of -inf, +inf or NaN: torch's results, NaN included."""
    big = torch.finfo(dtype).max
    x = torch.randn((10, n), device="cuda").to(dtype)
    x[0, 0] = 30
    x[1, -1] = 30
    x[2, 100:110] = 30
    x[3, :] = big * 0.9
    x[3, 1] = big
    x[4, 5] = -big
    x[4, 60000] = big
    x[5, 8192:16384] = -math.inf
    x[6, :] = -math.inf
    x[7, 123] = math.inf
    x[8, n - 1] = math.nan  # with n = 70001: in the tail, which its block holds beside no other element
    x[9, :] = 0  # every element equal
    y = forward_poisoned(x)
    expected = torch.softmax(x.double(), -1)
    torch.testing.assert_close(y.double(), expected, equal_nan=True, **tolerance(dtype))
    assert y[6].isnan().all() and y[7].isnan().all() and y[8].isnan().all()


@pytest.mark.gpu
@needs_sm90
def test_forward_error_no_worse_than_torch():
    """fp32, against float64: at most torch's own error on the same input plus an ulp of the
    largest output (the order of summation differs, and ex2.approx is not torch's expf), over
    every chunk of a 16-block row, the maximum first, last or repeated. (At most the larger of
    the two alone is too tight: another order of summation exceeds torch's error on a few
    inputs by a fraction of an ulp, with every form of the kernel.)"""
    x = torch.randn((8, 131072), device="cuda") * 5
    x[0, 0], x[1, -1], x[2, ::4096] = 40, 40, 40
    expected = softmax_ref(x.cpu().double().numpy())
    ours = forward_poisoned(x).cpu().double().numpy()
    theirs = torch.softmax(x, -1).cpu().double().numpy()
    ulp = float(np.spacing(np.float32(np.abs(expected).max())))
    err, torch_err = np.abs(ours - expected).max(), np.abs(theirs - expected).max()
    assert err <= torch_err + ulp, (err, torch_err, ulp)


@pytest.mark.gpu
@needs_sm90
@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_rows_off_16_byte_boundaries(dtype):
    """Rows of odd length start at every offset from a 16-byte boundary: the kernel splits them
    into head, aligned body and tail (cluster.packs) where x and y rows share their offsets,
    and reads them an element at a time where they do not (y with another row stride)."""
    m, n = 24, 50257
    assert cluster.applies("fwd", m, n, dtype, torch.device("cuda"))
    x = (torch.randn((m, n), device="cuda") * 4).to(dtype)
    x[3, 0], x[5, n - 1] = 30, 30  # the maximum in a head, and in a tail
    expected = softmax_ref(x.cpu().double().numpy())
    assert cluster.packs([x, torch.empty_like(x)]) == 16 // x.element_size()
    np.testing.assert_allclose(forward_poisoned(x).cpu().double().numpy(), expected, **tolerance(dtype))
    y = torch.empty((m, n + 5), dtype=dtype, device="cuda")[:, :n]
    assert cluster.packs([x, y]) == 0
    np.testing.assert_allclose(forward_poisoned(x, y).cpu().double().numpy(), expected, **tolerance(dtype))


@pytest.mark.gpu
@needs_sm90
@pytest.mark.parametrize("n", [16385, 20001, 50257, 70001, 131073])
@pytest.mark.parametrize("dtype", DTYPES)
def test_odd_rows_in_head_body_and_tail_match_float64(dtype, n):
    """Both directions on rows split into head, body and tail (VEC > 0), 9 rows: every head
    length a pack allows; the maximum in a head, and in a tail. (16-bit rows from 16385 columns
    run the cluster; fp32 ones below MIN_COLS the tiles.)"""
    x = (torch.randn((9, n), device="cuda") * 4).to(dtype)
    x[3, 0], x[5, n - 1] = 30, 30
    assert cluster.packs([x, x]) == 16 // x.element_size()
    np.testing.assert_allclose(
        forward_poisoned(x).cpu().double().numpy(), softmax_ref(x.cpu().double().numpy()), **tolerance(dtype)
    )
    y, dy = inputs(9, n, dtype, n)
    assert cluster.packs([y, dy, y]) == 16 // x.element_size()
    np.testing.assert_allclose(
        backward_poisoned(y, dy).cpu().double().numpy(), reference(y, dy), **tolerance(dtype)
    )
