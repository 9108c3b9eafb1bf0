"""Accuracy of the Triton softmax on adversarial rows, against float64 and against torch.

Rows whose maximum is the first, the last or a repeated element; rows offset far from 0
(an exponent computed as x * log2(e) - max * log2(e) loses digits there); magnitudes up to
FLT_MAX (scaling before subtracting the max overflows there); +-inf and NaN; and rows of
2**17 and 2**18 + 1 elements, through the looped path (many tiles, a ragged tail) and the
one-pass path. The looped path's error must be no worse than torch's softmax on the same
input, up to a few units in the last place of the largest output (the order of summation
differs); the one-pass path's, no worse than torch's or than the bound of an fp32 tree sum
of the row (log2 N + 2 units), whichever is larger.

On the CPU these run under Triton's interpreter (one row each, to stay affordable); with a
GPU, on CUDA against F.softmax on the GPU.
"""

import math

import numpy as np
import pytest
import torch
from kernels_triton import SoftmaxConfig, softmax, softmax_backward
from labtools.ops import softmax_backward_ref, softmax_ref, softmax_stress_rows, tolerance
from triton_helpers import DEVICE

pytestmark = pytest.mark.filterwarnings("ignore:(invalid value|overflow) encountered:RuntimeWarning")

FLT_MAX = float(np.finfo(np.float32).max)
ULPS = 4  # allowed beyond torch's error, in units of the largest output's last place


def row(kind: str, n: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal(n) * 3
    if kind == "max first":
        x[0] = x.max() + 5
    elif kind == "max last":
        x[-1] = x.max() + 5
    elif kind == "max repeated":
        x[[1, n // 2, n - 1]] = x.max() + 2
    elif kind == "offset":
        x += 1e4
    elif kind == "huge":
        x *= 1e37
        x[n // 3] = FLT_MAX
    return x.astype(np.float32)


def max_error(got: torch.Tensor, expected: np.ndarray) -> float:
    return float(np.abs(got.detach().cpu().double().numpy() - expected).max())


def no_worse_than_torch(
    ours: torch.Tensor, theirs: torch.Tensor, expected: np.ndarray, ulps: float = ULPS
) -> None:
    ulp = float(np.spacing(np.float32(np.abs(expected).max())))
    err, torch_err = max_error(ours, expected), max_error(theirs, expected)
    assert err <= max(torch_err, ulps * ulp), f"error {err:.3g}, torch's {torch_err:.3g}, ulp {ulp:.3g}"


def tree_sum_ulps(n: int) -> float:
    """The one-pass path sums a row as a tree of log2(N) levels in fp32, as F.softmax does:
    an element that dominates the sum meets a rounding at each level. Its error bound, in
    units of the largest output's last place."""
    return math.log2(n) + 2


KINDS = ["max first", "max last", "max repeated", "offset", "huge"]
LENGTHS = [600, 5000, 2**17, 2**18 + 1]


# huge magnitudes in long rows only on the GPU: the interpreter's time goes to the other kinds
FORWARD_CASES = [(k, n) for k in KINDS for n in LENGTHS if DEVICE == "cuda" or k != "huge" or n <= 5000]


@pytest.mark.parametrize("kind,n", FORWARD_CASES, ids=[f"{k}-{n}" for k, n in FORWARD_CASES])
def test_forward_error_no_worse_than_torch(kind, n):
    x = torch.tensor(row(kind, n, n + len(kind)), device=DEVICE)[None, :]
    expected = softmax_ref(x.cpu().double().numpy())
    theirs = torch.softmax(x, -1)
    ours = softmax(x)  # the default config: one pass or looped, as the picks say
    np.testing.assert_allclose(ours.cpu().double().numpy(), expected, **tolerance(torch.float32))
    no_worse_than_torch(ours, theirs, expected, ulps=tree_sum_ulps(n))
    looped = softmax(x, config=SoftmaxConfig(1024))  # (max, sum) pairs merged across tiles and lanes
    no_worse_than_torch(looped, theirs, expected)
    if n <= 1024:  # a warp a row (configs.rule's form for short rows): packs summed, then lanes
        warp = softmax(x, config=SoftmaxConfig(4 * 1024, 4, warp_rows=True))
        no_worse_than_torch(warp, theirs, expected, ulps=tree_sum_ulps(n))


@pytest.mark.parametrize("n", [5000, 2**17])
def test_forward_one_pass_and_looped_agree_with_float64(n):
    """The same row through the one-pass path (BLOCK >= N) and the looped one (BLOCK < N)."""
    x = torch.tensor(row("max last", n, 3), device=DEVICE)[None, :]
    expected = softmax_ref(x.cpu().double().numpy())
    no_worse_than_torch(
        softmax(x, config=SoftmaxConfig(1 << (n - 1).bit_length())),
        torch.softmax(x, -1),
        expected,
        ulps=tree_sum_ulps(n),
    )
    no_worse_than_torch(softmax(x, config=SoftmaxConfig(1024)), torch.softmax(x, -1), expected)


@pytest.mark.parametrize("n", [600, 5000, 2**17, 2**18 + 1])
def test_backward_error_no_worse_than_torch(n):
    x = torch.tensor(row("max last", n, n), device=DEVICE)[None, :]
    y = torch.softmax(x.double(), -1).float()
    dy = torch.tensor(np.random.default_rng(n).standard_normal(n).astype(np.float32), device=DEVICE)[None, :]
    expected = softmax_backward_ref(y.cpu().double().numpy(), dy.cpu().double().numpy())
    ours = softmax_backward(y, dy)
    theirs = torch._softmax_backward_data(dy, y, -1, torch.float32)
    np.testing.assert_allclose(ours.cpu().double().numpy(), expected, **tolerance(torch.float32))
    no_worse_than_torch(ours, theirs, expected)
    if n <= 1024:  # a warp a row
        warp = softmax_backward(y, dy, config=SoftmaxConfig(4 * 1024, 4, warp_rows=True))
        no_worse_than_torch(warp, theirs, expected)


@pytest.mark.parametrize(
    "config", [None, SoftmaxConfig(4), SoftmaxConfig(2)], ids=["default", "looped4", "looped2"]
)
def test_magnitudes_up_to_flt_max(config):
    """Finite inputs of any magnitude give torch's answer: the max is subtracted before
    anything is scaled, so nothing overflows to inf - inf."""
    cases = [
        ([3e38, 3e38], [0.5, 0.5]),
        ([FLT_MAX, -FLT_MAX], [1.0, 0.0]),
        ([-FLT_MAX, FLT_MAX, FLT_MAX, float("-inf")], [0.0, 0.5, 0.5, 0.0]),
        ([2.5e38, 3e38, -3e38, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0, 0.0]),
    ]
    for values, expected in cases:
        x = torch.tensor([values], device=DEVICE)
        got = softmax(x, config=config)
        assert got.tolist() == [expected], (values, got)
        torch.testing.assert_close(got, torch.softmax(x, -1))


def bf16_ulp(value: float) -> float:
    return 2.0 ** (math.floor(math.log2(value)) - 7)


@pytest.mark.parametrize(
    "config",
    [None, SoftmaxConfig(1024), SoftmaxConfig(4 * 1024, 4, warp_rows=True), SoftmaxConfig(256)],
    ids=["default", "one-pass", "warp-rows", "looped"],
)
def test_bf16_rows_no_worse_than_torch(config):
    """bf16 rows of every magnitude a bf16 can hold (labtools.ops.softmax_stress_rows: where
    scaling before subtracting the max, or a rounded max * log2(e), gives inf or NaN), through
    each forward path. Each row's error is at most torch's or one bf16 unit of its largest
    output; non-finite rows give torch's NaNs."""
    x = torch.tensor(softmax_stress_rows(600, 3)).to(torch.bfloat16)
    special = x[:5].clone()
    special[0, 7] = float("inf")
    special[1, 9] = float("nan")
    special[2] = float("-inf")
    special[3, ::2] = float("-inf")
    special[4, 100] = float("-inf")
    x = torch.cat([x, special]).to(DEVICE)
    expected = softmax_ref(x.float().cpu().double().numpy())
    ours, theirs = softmax(x, config=config), torch.softmax(x, -1)
    assert torch.equal(torch.isnan(ours), torch.isnan(theirs))
    for r in range(x.shape[0]):
        if not np.isnan(expected[r]).any():
            ulp = bf16_ulp(float(expected[r].max()))
            err, torch_err = max_error(ours[r], expected[r]), max_error(theirs[r], expected[r])
            assert err <= max(torch_err, ulp), f"row {r}: error {err:.3g}, torch's {torch_err:.3g}"


def test_non_finite_in_a_long_row_like_torch():
    """+inf and NaN anywhere in a long (looped) row make it NaN; -inf entries weigh nothing."""
    n = 2**17 + 3
    base = torch.tensor(row("max first", n, 5), device=DEVICE)
    x = base.repeat(3, 1)
    x[0, n - 1] = float("inf")
    x[1, n // 2] = float("nan")
    x[2, ::7] = float("-inf")
    torch.testing.assert_close(softmax(x), torch.softmax(x, -1), equal_nan=True)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 70000), (1024, 131072)], ids=["70000", "1024x131072"])
def test_gpu_long_rows_no_worse_than_f_softmax(shape):
    m, n = shape
    x = torch.randn(shape, device="cuda") * 3
    x[:, -1] = x.max() + 5  # the maximum last in every row
    rows = torch.arange(0, m, max(1, m // 16), device="cuda")
    expected = softmax_ref(x[rows].cpu().double().numpy())
    no_worse_than_torch(softmax(x)[rows], torch.softmax(x, -1)[rows], expected)
