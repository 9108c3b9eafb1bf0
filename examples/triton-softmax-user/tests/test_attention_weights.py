"""attention_weights against a float64 NumPy reference; on CPU under Triton's interpreter."""

import os

if not os.environ.get("CUDA_VISIBLE_DEVICES") and "TRITON_INTERPRET" not in os.environ:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: no GPU needed

import numpy as np
import pytest
import torch
from triton_softmax_user import attention_weights

DEVICE = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"


def reference(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    s = q.astype(np.float64) @ k.astype(np.float64).swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("shape", [(7, 5, 16), (2, 3, 33, 8)])
def test_matches_float64_reference(shape):
    gen = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))
    *batch, n, d = shape
    q = torch.randn(*batch, n, d, generator=gen)
    k = torch.randn(*batch, n + 3, d, generator=gen) * 4
    w = attention_weights(q.to(DEVICE), k.to(DEVICE)).cpu()
    assert w.shape == (*batch, n, n + 3) and w.dtype == torch.float32
    np.testing.assert_allclose(w.numpy(), reference(q.numpy(), k.numpy()), rtol=1e-5, atol=1e-7)


def test_huge_scores_max_first_and_repeated():
    q = torch.full((4, 8), 1e18)
    scale = torch.tensor([6.0, 1.0, 3.0, 6.0, 2.0, 5.0])[:, None]
    k = torch.eye(8)[:6] * scale * 1e19  # scores up to ~2e37, near FLT_MAX; the max twice
    w = attention_weights(q.to(DEVICE), k.to(DEVICE)).cpu()
    np.testing.assert_allclose(w.numpy(), reference(q.numpy(), k.numpy()), atol=1e-7)
    np.testing.assert_allclose(w[:, [0, 3]].numpy(), 0.5, rtol=1e-6)


def test_mismatched_feature_dims():
    with pytest.raises(ValueError, match="last dim"):
        attention_weights(torch.zeros(2, 4), torch.zeros(3, 5))
