"""AdamW, the learning-rate schedule and gradient clipping, written to match torch.

`AdamW.step` is torch.optim.AdamW's update, operation for operation (decoupled weight
decay first, then the moments, then the bias-corrected step), so the PyTorch port takes
the same step to rounding. `clip_grad_norm` is torch.nn.utils.clip_grad_norm_.

Weight decay goes to the Linear weights only (the 2-D ".w" tensors: attention, MLP and
LM head); biases, LayerNorm parameters and the two embedding tables are not decayed:
decaying a LayerNorm gain or a bias towards 0 has no regularising meaning, and the
embeddings of rare tokens would shrink between their rare updates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def decays(name: str, shape: tuple[int, ...]) -> bool:
    """Whether parameter `name` gets weight decay (see the module docstring)."""
    return len(shape) == 2 and name.endswith(".w")


@dataclass(frozen=True)
class AdamWConfig:
    lr: float = 3e-3
    betas: tuple[float, float] = (0.9, 0.95)
    eps: float = 1e-8
    weight_decay: float = 0.1


class AdamW:
    """Updates `params` (a dict of arrays) in place."""

    def __init__(self, params: dict[str, np.ndarray], config: AdamWConfig = AdamWConfig()):
        self.params = params
        self.config = config
        self.step_count = 0
        self.exp_avg = {n: np.zeros_like(p) for n, p in params.items()}
        self.exp_avg_sq = {n: np.zeros_like(p) for n, p in params.items()}

    def step(self, grads: dict[str, np.ndarray], lr: float | None = None) -> None:
        """One update with learning rate `lr` (the config's when None)."""
        lr = self.config.lr if lr is None else lr
        beta1, beta2 = self.config.betas
        self.step_count += 1
        bias_correction1 = 1 - beta1**self.step_count
        bias_correction2_sqrt = math.sqrt(1 - beta2**self.step_count)
        step_size = lr / bias_correction1
        for name, p in self.params.items():
            g, m, v = grads[name], self.exp_avg[name], self.exp_avg_sq[name]
            if decays(name, p.shape):
                p *= 1 - lr * self.config.weight_decay
            m += (1 - beta1) * (g - m)  # torch: exp_avg.lerp_(grad, 1 - beta1)
            v *= beta2
            v += (1 - beta2) * (g * g)
            denom = np.sqrt(v) / bias_correction2_sqrt + self.config.eps
            p -= step_size * (m / denom)


def clip_grad_norm(grads: dict[str, np.ndarray], max_norm: float) -> float:
    """Scale all gradients in place so their global L2 norm is at most `max_norm`;
    return the norm before clipping (torch.nn.utils.clip_grad_norm_)."""
    total = math.sqrt(sum(float(np.sum(g.astype(np.float64) ** 2)) for g in grads.values()))
    coef = min(max_norm / (total + 1e-6), 1.0)
    for g in grads.values():
        g *= g.dtype.type(coef)
    return total


def lr_at(step: int, *, max_lr: float, min_lr: float, warmup_steps: int, total_steps: int) -> float:
    """Linear warm-up to max_lr over `warmup_steps`, then cosine decay to min_lr at
    `total_steps` (nanoGPT's schedule). `step` counts from 0."""
    if step < warmup_steps:
        return max_lr * (step + 1) / warmup_steps
    if step >= total_steps:
        return min_lr
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (max_lr - min_lr)
