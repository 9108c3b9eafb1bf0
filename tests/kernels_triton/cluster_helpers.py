"""Inputs, poisoned launches and the float64 reference shared by the cluster kernels' tests."""

import math

import numpy as np
import pytest
import torch
from kernels_triton import launch
from labtools.ops import softmax_backward_ref

SM90 = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
needs_sm90 = pytest.mark.skipif(
    not SM90, reason="needs an sm_90 GPU (thread-block clusters of up to 16 blocks)"
)
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def backward_poisoned(y: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor | None = None) -> torch.Tensor:
    dx = torch.empty_like(y) if dx is None else dx
    dx.fill_(math.nan)
    launch.cluster_template("bwd", [y, dy, dx], *y.shape)(y, dy, dx)
    return dx


def forward_poisoned(x: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
    """y = softmax(x) by the cluster kernel, y filled with NaN first."""
    y = torch.empty_like(x) if y is None else y
    y.fill_(math.nan)
    launch.cluster_template("fwd", [x, y], *x.shape)(x, y)
    return y


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
