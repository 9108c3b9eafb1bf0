"""Causal multi-head self-attention, forward and hand-written backward.

All heads at once: q, k, v are (B, H, T, D) and the scores (B, H, T, T); position t
attends to positions <= t (the upper triangle is -inf before the softmax, so its
probabilities are exactly 0 and so are its gradients).
"""

from __future__ import annotations

import math

import numpy as np

from minigpt_np.layers import linear, linear_backward, softmax, softmax_backward


def _split_heads(x, n_head):  # (B, T, C) -> (B, H, T, D)
    B, T, C = x.shape
    return x.reshape(B, T, n_head, C // n_head).transpose(0, 2, 1, 3)


def _merge_heads(x):  # (B, H, T, D) -> (B, T, C)
    B, H, T, D = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, H * D)


def causal_self_attention(x, qkv_w, qkv_b, proj_w, proj_b, n_head):
    """x (B, T, C); qkv (3C, C) / (3C,), proj (C, C) / (C,) -> (B, T, C)."""
    B, T, C = x.shape
    qkv, qkv_cache = linear(x, qkv_w, qkv_b)  # (B, T, 3C)
    q, k, v = (_split_heads(t, n_head) for t in np.split(qkv, 3, axis=-1))  # (B, H, T, D)
    scale = 1.0 / math.sqrt(C // n_head)
    scores = (q @ k.transpose(0, 1, 3, 2)) * scale  # (B, H, T, T)
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    att = softmax(np.where(future, -np.inf, scores))
    y = _merge_heads(att @ v)  # (B, T, C)
    out, proj_cache = linear(y, proj_w, proj_b)
    return out, (qkv_cache, proj_cache, q, k, v, att, scale, n_head)


def causal_self_attention_backward(dout, cache):
    """-> dx (B, T, C), d qkv_w, d qkv_b, d proj_w, d proj_b."""
    qkv_cache, proj_cache, q, k, v, att, scale, n_head = cache
    dy, dproj_w, dproj_b = linear_backward(dout, proj_cache)
    dy = _split_heads(dy, n_head)  # (B, H, T, D)
    datt = dy @ v.transpose(0, 1, 3, 2)  # (B, H, T, T)
    dv = att.transpose(0, 1, 3, 2) @ dy
    dscores = softmax_backward(datt, att) * scale  # masked entries: att = 0 -> 0
    dq = dscores @ k
    dk = dscores.transpose(0, 1, 3, 2) @ q
    dqkv = np.concatenate([_merge_heads(t) for t in (dq, dk, dv)], axis=-1)  # (B, T, 3C)
    dx, dqkv_w, dqkv_b = linear_backward(dqkv, qkv_cache)
    return dx, dqkv_w, dqkv_b, dproj_w, dproj_b
