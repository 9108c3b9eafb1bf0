"""The fp32 accuracy of every forward path on long rows (GPU): error no worse than torch's on
the same input at 2^17 and 2^18 + 1, on adversarial rows (the maximum first, last or repeated;
finite magnitudes up to FLT_MAX; a maximum that rises at every element), NaN-poisoned outputs.
"""

from __future__ import annotations

import numpy as np
import pytest
from kernels_cuda import arrays
from kernels_cuda import softmax_variants as sm

FLT_MAX = float(np.finfo(np.float32).max)


def _torch():
    return pytest.importorskip("torch")


def _adversarial_rows(n, kind):
    """Rows of n fp32 values in [-8, 8) with the row's maximum placed or scaled adversarially."""
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(n)
    x = torch.rand(4, n, device="cuda", generator=g) * 16 - 8
    big = 30.0
    if kind == "max_first":
        x[:, 0] = big
    elif kind == "max_last":
        x[:, -1] = big
    elif kind == "max_repeated":
        x[:, :: max(1, n // 7)] = big
    elif kind == "rising":  # the running max grows at every element: every rescale is taken
        x = torch.linspace(-20, 20, n, device="cuda").expand(4, n).contiguous()
    elif kind == "flt_max":  # finite magnitudes up to FLT_MAX: x - max must come before any scaling
        x = x / 8 * FLT_MAX
        x[:, -1] = FLT_MAX
        x[1] = -FLT_MAX
        x[1, n // 2] = FLT_MAX
    return x


FORWARD_PATHS = ["auto", "v4", "v4_online", "v2", "v1"]


@pytest.mark.gpu
@pytest.mark.parametrize("n", [2**17, 2**18 + 1, 2**18, 70000])
@pytest.mark.parametrize("kind", ["max_first", "max_last", "max_repeated", "rising", "flt_max"])
@pytest.mark.parametrize("variant", FORWARD_PATHS)
def test_fp32_forward_error_is_no_worse_than_torch(n, kind, variant):
    if kind == "rising" and variant in ("auto", "v4", "v4_online") and n >= 2**18:
        # Known shortfall: a row whose max grows at every element rescales each thread's running
        # sum once per pack, and the rounding of those rescales adds up past torch's error on
        # rows this long.
        pytest.xfail("online rescaling error on rows whose max rises at every element")
    torch = _torch()
    x = _adversarial_rows(n, kind)
    ref = torch.softmax(x.double(), dim=-1)
    torch_err = float((torch.softmax(x, -1).double() - ref).abs().max())
    with arrays.poison_outputs():
        y = sm.softmax(x, variant=variant)
    assert not torch.isnan(y).any()
    err = float((y.double() - ref).abs().max())
    # no worse than torch beyond rounding: twice its error plus two ulps of the largest output
    # (which of two fp32 sums of a row lands an ulp higher at 1.0 is noise, not a trend in N)
    assert err <= 2 * torch_err + 2**-23 * float(ref.abs().max()), (err, torch_err)
    # the row sums stay at 1 to fp32 accuracy (a biased sum would show here first)
    assert float((y.double().sum(-1) - 1).abs().max()) <= max(
        4e-6, 2 * float((torch.softmax(x, -1).double().sum(-1) - 1).abs().max())
    )


@pytest.mark.gpu
def test_v1_runs_at_any_n():
    torch = _torch()
    for n in (1, 1025, 70000, 2**18 + 1):
        x = torch.randn(3, n, device="cuda") * 4
        with arrays.poison_outputs():
            y = sm.softmax(x, variant="v1")
        ref = torch.softmax(x.double(), -1)
        assert float((y.double() - ref).abs().max()) <= max(
            1e-7, 2 * float((torch.softmax(x, -1).double() - ref).abs().max())
        )
