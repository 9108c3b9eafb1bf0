"""Quiet by default (issue 44): no warning a user cannot act on.

- Triton's interpreter evaluates every lane, stored or not; rows past M used to read -inf
  in every lane and compute -inf - -inf, a NumPy "invalid value" warning per launch.
- Triton 3.9 warns on every compile while TRITON_DEFAULT_FP_FUSION is unset; `lab` sets it
  to the value Triton uses anyway.
- torch's C++ extension helper logs the CUDA_HOME it guessed on a machine with no CUDA
  runtime (Inductor's CPU path); `lab` drops that one line.
"""

import os
import subprocess
import sys
import warnings

import pytest
import torch


@pytest.mark.parametrize("shape", [(2, 3), (2, 4), (8, 37), (3, 600), (5, 1000)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_triton_softmax_warns_about_nothing_on_finite_inputs(shape, dtype):
    import kernels_triton

    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(*shape, device=device, dtype=torch.float64).to(dtype).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # under the interpreter a NumPy warning becomes an error
        y = kernels_triton.softmax(x, dim=-1)
        (dx,) = torch.autograd.grad(y, x, torch.ones_like(y))
    ref = torch.softmax(x.detach().double(), dim=-1)
    tol = 1e-6 if dtype == torch.float32 else 1e-2
    assert torch.allclose(y.double(), ref, atol=tol, rtol=0) and torch.isfinite(dx).all()


def _python(code: str, **env) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("TRITON_DEFAULT_FP_FUSION", "CUDA_HOME")}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**base, **env}
    )


TRITON_FUSION = (
    "import warnings, triton\n"
    "{setup}\n"
    "with warnings.catch_warnings():\n"
    "    warnings.simplefilter('error')\n"
    "    assert triton.knobs.language.fp_fusion_enabled(None) is True\n"
)


def test_lab_sets_the_fp_fusion_default_triton_uses_anyway():
    setup = "from labtools.cli import quiet_environment; quiet_environment()"
    proc = _python(TRITON_FUSION.format(setup=setup))
    assert proc.returncode == 0, proc.stderr[-2000:]
    unset = _python(TRITON_FUSION.format(setup="pass"))  # the warning this prevents
    assert unset.returncode != 0 and "TRITON_DEFAULT_FP_FUSION" in unset.stderr
    mine = _python(
        TRITON_FUSION.format(setup=setup).replace("is True", "is False"), TRITON_DEFAULT_FP_FUSION="0"
    )
    assert mine.returncode == 0, mine.stderr[-2000:]  # a user's own setting wins


CUDA_HOME_GUESS = (
    "import torch\n"
    "{setup}\n"
    "from torch.utils import cpp_extension\n"
    "assert not torch.cuda.is_available()\n"
    "cpp_extension._find_cuda_home()\n"
)


@pytest.mark.skipif(torch.cuda.is_available(), reason="torch logs the guess only without a CUDA runtime")
def test_lab_drops_the_cuda_home_guess_on_a_machine_without_cuda(tmp_path):
    setup = "from labtools.cli import quiet_environment; quiet_environment()"
    quiet = _python(CUDA_HOME_GUESS.format(setup=setup), CUDA_HOME=str(tmp_path))
    assert quiet.returncode == 0 and "CUDA_HOME" not in quiet.stderr, quiet.stderr[-2000:]
    loud = _python(CUDA_HOME_GUESS.format(setup=""), CUDA_HOME=str(tmp_path))  # what it drops
    assert "No CUDA runtime is found" in loud.stderr, loud.stderr[-2000:]
