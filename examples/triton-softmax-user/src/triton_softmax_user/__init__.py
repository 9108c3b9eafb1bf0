"""Attention weights, softmax(q @ k^T / sqrt(d)) over the keys, with kernel-lab's Triton softmax."""

import math

import torch
from kernels_triton import softmax


def attention_weights(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """q: (..., queries, d), k: (..., keys, d) -> (..., queries, keys), rows summing to 1."""
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share their last dim; got {q.shape[-1]} and {k.shape[-1]}")
    return softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
