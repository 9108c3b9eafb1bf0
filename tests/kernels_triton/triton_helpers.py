"""What the tests of kernels_triton's softmax share: the device, dtypes, seeded inputs, the
comparison against the float64 reference, and kernel launches into poisoned outputs."""

import numpy as np
import torch
from kernels_triton import SoftmaxConfig, configs, launch
from labtools.ops import tolerance

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if DEVICE == "cuda" else [])


def randn(shape, dtype, seed, scale=1.0, device=DEVICE):
    """Seeded normals, drawn where they are used (the benchmark shapes hold up to 157M
    elements: drawing them on the host would take seconds each)."""
    g = torch.Generator(device=device).manual_seed(seed)
    return (scale * torch.randn(shape, generator=g, device=device, dtype=torch.float32)).to(dtype)


def assert_close(got: torch.Tensor, expected: np.ndarray, dtype):
    got = got.detach().cpu().double().numpy()
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, **tolerance(dtype))


def launch_poisoned(name, inputs, config):
    """Run one kernel on 2D inputs into a NaN-filled output; returns the output."""
    out = torch.full_like(inputs[0], float("nan"))
    launch.launch(name, [*inputs, out], *inputs[0].shape, config)
    return out


def warp_rows(n: int) -> SoftmaxConfig:
    """The warp-a-row config of rows of N, 4 rows a program (configs.rule's for short rows)."""
    return SoftmaxConfig(4 * configs.next_pow2(n), 4, warp_rows=True)
