"""Shared helpers for minigpt_np's tests: small float64 models with non-trivial weights."""

import numpy as np
from minigpt_np.model import GPTConfig, MiniGPT

SMALL = GPTConfig(vocab_size=37, block_size=12, n_layer=2, n_head=2, n_embd=16)


def perturbed_model(config: GPTConfig, seed: int, dtype=np.float64) -> MiniGPT:
    """A model whose LayerNorm gains, biases and weights are all away from their
    initial values (ones / zeros would hide mistakes in their gradients)."""
    model = MiniGPT.init(config, seed=seed, dtype=dtype)
    rng = np.random.default_rng(seed + 1)
    for p in model.params.values():
        p += rng.normal(0.0, 0.1, p.shape).astype(dtype)
    return model
