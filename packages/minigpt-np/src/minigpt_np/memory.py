"""Will a training run fit in memory? Estimated from the sizes alone, before any work.

A training step holds, per layer, the attention scores and probabilities and their
gradients (batch x heads x context x context: the term that grows with the square of
the context), about sixteen d-wide activations per token, and the logits, probabilities
and their gradient (batch x context x vocabulary). The estimate counts those and the
parameters with AdamW's two moments and a gradient, so it errs low rather than high: a
run it refuses would certainly not fit; one it lets through may still be large.
"""

from __future__ import annotations

import os

from minigpt_np.model import GPTConfig

SCORE_COPIES = 4  # scores, probabilities, and the gradients of both, per layer
TOKEN_ACTIVATIONS = 16  # d-wide vectors kept per token per layer (LN, q/k/v, MLP 4d x 2, ...)
LOGIT_COPIES = 3  # logits, probabilities, their gradient
PARAM_COPIES = 4  # weights, gradients, AdamW's two moments
VALIDATION_BATCH = 64  # see train.validation_loss


def step_bytes(batch: int, context: int, itemsize: int, config: GPTConfig | None = None) -> int:
    """Bytes one training step of `batch` windows of `context` tokens needs, at least."""
    c = config or GPTConfig(block_size=context)
    scores = c.n_layer * batch * c.n_head * context * context * SCORE_COPIES
    tokens = c.n_layer * batch * context * c.n_embd * TOKEN_ACTIVATIONS
    logits = batch * context * c.vocab_size * LOGIT_COPIES
    params = (context * c.n_embd + c.vocab_size * c.n_embd * 2 + c.n_layer * 12 * c.n_embd**2) * PARAM_COPIES
    return itemsize * (scores + tokens + logits + params)


def available_bytes() -> int | None:
    """Memory available to a new allocation here (Linux: MemAvailable), None if unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _gb(n: int) -> str:
    return f"{n / 1e9:,.1f} GB" if n < 1e12 else f"{n / 1e12:,.3g} TB"


def check_fits(batch_size: int, block_size: int, dtype: str, available: int | None = None) -> None:
    """ValueError, one line naming --batch-size and --block-size, when a training step of
    these sizes needs more memory than is available here."""
    import numpy as np

    itemsize = np.dtype(dtype).itemsize
    need = max(
        step_bytes(batch_size, block_size, itemsize),
        step_bytes(VALIDATION_BATCH, block_size, itemsize) // 2,  # forward only
    )
    available = available_bytes() if available is None else available
    if available is not None and need > available:
        raise ValueError(
            f"argument --batch-size/--block-size: a training step with --batch-size {batch_size} and "
            f"--block-size {block_size} ({dtype}) needs about {_gb(need)}, more than the {_gb(available)} "
            "of memory available here (attention grows with the square of --block-size); lower them"
        )
