"""The layers of the MiniGPT, each as a forward and a hand-written backward.

Conventions (those of torch.nn, so the PyTorch port is a name-for-name copy):
- Linear weights are (out, in): y = x @ W.T + b.
- LayerNorm normalises over the last axis with the biased variance and eps inside the
  square root: (x - mean) / sqrt(var + eps) * w + b, eps = 1e-5.
- GELU is the tanh approximation (torch: nn.GELU(approximate="tanh")).

A forward returns (output, cache); its backward takes d(output) and the cache and returns
the gradients of its inputs and parameters. Everything works on any leading shape
(B, T, ...) and keeps the input dtype.
"""

from __future__ import annotations

import math

import numpy as np

LN_EPS = 1e-5
_GELU_C = math.sqrt(2.0 / math.pi)  # a Python float: keeps float32 arrays float32


# --- Linear ----------------------------------------------------------------------------


def linear(x, w, b):
    """x (..., in), w (out, in), b (out,) -> (..., out).

    The leading axes are flattened so BLAS sees one (N, in) @ (in, out) product rather
    than a stack of small ones."""
    x2 = x.reshape(-1, x.shape[-1])  # (N, in)
    return (x2 @ w.T + b).reshape(*x.shape[:-1], w.shape[0]), (x2, w)


def linear_backward(dy, cache):
    """-> dx (..., in), dw (out, in), db (out,)."""
    x2, w = cache
    dy2 = dy.reshape(-1, dy.shape[-1])  # (N, out)
    return (dy2 @ w).reshape(*dy.shape[:-1], w.shape[1]), dy2.T @ x2, dy2.sum(axis=0)


# --- LayerNorm -------------------------------------------------------------------------


def layer_norm(x, w, b, eps=LN_EPS):
    """x (..., C) -> (..., C), normalised over C."""
    mean = x.mean(axis=-1, keepdims=True)
    xc = x - mean
    rstd = 1.0 / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + eps)
    xhat = xc * rstd
    return xhat * w + b, (xhat, rstd, w)


def layer_norm_backward(dy, cache):
    """-> dx, dw (C,), db (C,).  With g = dy * w:
    dx = rstd * (g - mean(g) - xhat * mean(g * xhat))."""
    xhat, rstd, w = cache
    C = dy.shape[-1]
    dw = (dy * xhat).reshape(-1, C).sum(axis=0)
    db = dy.reshape(-1, C).sum(axis=0)
    g = dy * w
    dx = rstd * (g - g.mean(axis=-1, keepdims=True) - xhat * (g * xhat).mean(axis=-1, keepdims=True))
    return dx, dw, db


# --- GELU (tanh approximation) ---------------------------------------------------------


def gelu(x):
    """0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3); in place where it can
    (this and its backward are the largest elementwise work of a step)."""
    u = x * x
    u *= 0.044715 * _GELU_C
    u += _GELU_C
    u *= x  # u
    t = np.tanh(u, out=u)
    return 0.5 * x * (1.0 + t), (x, t)


def gelu_backward(dy, cache):
    """d gelu / dx = 0.5 (1 + t) + 0.5 x (1 - t^2) du/dx, du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)."""
    x, t = cache
    slope = x * x
    slope *= 3 * 0.044715 * _GELU_C
    slope += _GELU_C
    slope *= x  # x du/dx
    slope *= 1.0 - t * t
    slope += 1.0 + t
    slope *= 0.5
    return slope * dy


# --- softmax ---------------------------------------------------------------------------


def softmax(x, axis=-1):
    """Stable softmax in x's dtype; rows of -inf (masked) entries get exactly 0 there."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_backward(dy, y, axis=-1):
    """dx = y * (dy - sum(y * dy))."""
    return y * (dy - (y * dy).sum(axis=axis, keepdims=True))


# --- embedding -------------------------------------------------------------------------


def embedding_backward(dy, idx, num_embeddings):
    """Gradient of table[idx] w.r.t. the table: rows summed per id.
    dy (..., C), idx (...) -> (num_embeddings, C)."""
    C = dy.shape[-1]
    dtable = np.zeros((num_embeddings, C), dtype=dy.dtype)
    np.add.at(dtable, idx.reshape(-1), dy.reshape(-1, C))
    return dtable


# --- loss ------------------------------------------------------------------------------


def cross_entropy(logits, targets):
    """Mean negative log-likelihood of `targets` (N,) under softmax(logits (N, V))."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    logsumexp = np.log(np.exp(shifted).sum(axis=-1))
    nll = logsumexp - shifted[np.arange(len(targets)), targets]
    return nll.mean(), (shifted, logsumexp, targets)


def cross_entropy_backward(cache):
    """d(mean loss)/d logits = (softmax(logits) - onehot(targets)) / N."""
    shifted, logsumexp, targets = cache
    dlogits = np.exp(shifted - logsumexp[:, None])
    dlogits[np.arange(len(targets)), targets] -= 1.0
    return dlogits / len(targets)
