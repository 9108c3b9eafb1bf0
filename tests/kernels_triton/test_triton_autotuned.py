"""kernels_triton.autotuned, the ladder's first rung, against float64 and against torch.softmax.

Every element of the output is written (outputs poisoned with NaN first); the error is no
worse than torch's on the same input, up to a few units in the last place of the largest
output (the order of summation differs); +-inf, NaN and all -inf rows come out as torch's.
On the CPU the kernel runs under Triton's interpreter (two configs, small shapes); with a
GPU, every config of the autotune list is in play and the shapes reach long rows.
"""

import numpy as np
import pytest
import torch
from kernels_triton.autotuned import ALL_CONFIGS, CONFIGS, softmax_autotuned, softmax_autotuned_kernel
from labtools.ops import softmax_ref, softmax_stress_rows, tolerance
from triton_helpers import DEVICE

pytestmark = pytest.mark.filterwarnings("ignore:(invalid value|overflow) encountered:RuntimeWarning")

ULPS = 4  # allowed beyond torch's error, in units of the largest output's last place


def max_error(got: torch.Tensor, expected: np.ndarray) -> float:
    return float(np.abs(got.cpu().double().numpy() - expected).max())


def assert_no_worse_than_torch(x: torch.Tensor, ours: torch.Tensor) -> None:
    expected = softmax_ref(x.cpu().double().numpy())
    np.testing.assert_allclose(ours.cpu().double().numpy(), expected, **tolerance(x.dtype))
    ulp = torch.finfo(x.dtype).eps * float(np.abs(expected).max())  # of the largest output, in x's dtype
    err, torch_err = max_error(ours, expected), max_error(torch.softmax(x, -1), expected)
    assert err <= max(torch_err, ULPS * ulp), f"error {err:.3g}, torch's {torch_err:.3g}, ulp {ulp:.3g}"


def launch_poisoned(x: torch.Tensor) -> torch.Tensor:
    """The kernel itself into a NaN-filled output: a lane it forgets to write stays NaN."""
    y = torch.full_like(x, float("nan"))
    softmax_autotuned_kernel[(x.shape[0],)](x, y, x.stride(0), y.stride(0), x.shape[1])
    return y


def test_the_autotune_list_is_the_ladder_rung():
    blocks = {c.kwargs["BLOCK"] for c in CONFIGS}
    warps = {c.num_warps for c in CONFIGS}
    if DEVICE == "cuda":
        assert blocks == {256, 512, 1024, 2048} and warps == {2, 4, 8} and len(CONFIGS) == 12
    else:  # the interpreter's: one, the others forced in test_rows_of_every_config_agree_with_float64
        assert CONFIGS == ALL_CONFIGS[:1]


SHAPES = [(1, 1), (3, 7), (5, 256), (4, 600), (2, 2049), (3, 5000)]
if DEVICE == "cuda":
    SHAPES += [(4096, 600), (64, 50257), (16, 131072), (1024, 8192)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_random_rows_match_float64(shape):
    x = torch.randn(shape, device=DEVICE) * 4
    y = launch_poisoned(x)
    assert not y.isnan().any()
    assert_no_worse_than_torch(x, y)
    assert_no_worse_than_torch(x, softmax_autotuned(x))


@pytest.mark.parametrize("n", [3, 600, 2500])
def test_adversarial_rows_no_worse_than_torch(n):
    """The max first, last and repeated; offsets of 200; magnitudes up to 3.3e38."""
    x = torch.tensor(softmax_stress_rows(n, seed=n), dtype=torch.float32, device=DEVICE)
    assert_no_worse_than_torch(x, launch_poisoned(x))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_16_bit_rows_no_worse_than_torch(dtype):
    x = (torch.randn(4, 1500, device=DEVICE) * 6).to(dtype)
    y = softmax_autotuned(x)
    assert y.dtype == dtype
    assert_no_worse_than_torch(x, y)


def test_non_finite_rows_come_out_as_torch():
    """+inf or NaN anywhere: the row is NaN; a row of -inf: NaN; -inf in part of a row (the
    first BLOCK lanes included) is 0 there and the rest a softmax."""
    n = 2300  # past every BLOCK of the list: -inf fills whole lanes' first chunks
    x = torch.randn(6, n, device=DEVICE)
    x[0, 5] = float("nan")
    x[1, n - 1] = float("inf")
    x[2] = float("-inf")
    x[3, : n - 3] = float("-inf")
    x[4, 1000] = float("nan")
    x[4, :1000] = float("-inf")  # NaN after lanes that have seen only -inf
    x[5, 7] = float("-inf")
    y, want = launch_poisoned(x), torch.softmax(x, -1)
    assert torch.equal(y.isnan(), want.isnan())
    finite = ~want.isnan()
    torch.testing.assert_close(y[finite], want[finite], atol=1e-7, rtol=1e-5)


def test_empty_inputs_and_bad_arguments():
    assert softmax_autotuned(torch.empty(0, 5, device=DEVICE)).shape == (0, 5)
    assert softmax_autotuned(torch.empty(3, 0, device=DEVICE)).shape == (3, 0)
    with pytest.raises(ValueError, match="x: a 2-D tensor"):
        softmax_autotuned(torch.randn(2, 3, 4, device=DEVICE))
    with pytest.raises(ValueError, match="contiguous rows"):
        softmax_autotuned(torch.randn(8, 6, device=DEVICE).t())
    with pytest.raises(ValueError, match="x: float32, float16 or bfloat16"):
        softmax_autotuned(torch.randn(2, 3, device=DEVICE, dtype=torch.float64))


def test_registered_with_labtools_as_triton_autotune():
    from labtools import registry

    impl = registry.get("triton.autotune")
    assert impl.op == "softmax" and impl.backend == "triton" and impl.device == "cuda"


def _every_config_agrees_with_float64(x, configs) -> None:
    for config in configs:
        y = torch.full_like(x, float("nan"))
        softmax_autotuned_kernel.fn[(x.shape[0],)](
            x, y, x.stride(0), y.stride(0), x.shape[1], num_warps=config.num_warps, **config.kwargs
        )
        assert not y.isnan().any(), config
        assert_no_worse_than_torch(x, y)


@pytest.mark.gpu
def test_gpu_rows_of_every_config_agree_with_float64():
    """Each (BLOCK, num_warps) of the list, forced one at a time, on a row length that leaves a
    ragged last chunk for all of them."""
    _every_config_agrees_with_float64(torch.randn(256, 3001, device="cuda") * 3, ALL_CONFIGS)


@pytest.mark.skipif(DEVICE == "cuda", reason="the GPU test forces every config")
def test_the_interpreter_forces_the_smallest_and_the_largest_config():
    _every_config_agrees_with_float64(torch.randn(4, 3001) * 3, (ALL_CONFIGS[0], ALL_CONFIGS[-1]))
