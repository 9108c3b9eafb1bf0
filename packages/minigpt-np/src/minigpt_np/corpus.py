"""The training and validation data: sentences from the grammar, as token streams.

Both sets come from one seeded stream of sentences (training first); validation keeps
only sentences that do not occur in the training set, so its loss is measured on
held-out sentences. Training batches are random windows of the training stream.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from minigpt_np.grammar import Grammar, grammar
from minigpt_np.tokenizer import Tokenizer


@dataclass(frozen=True)
class Corpus:
    tokenizer: Tokenizer
    train: np.ndarray  # (N,) int64 token stream
    val: np.ndarray  # (M,) int64 token stream
    val_sentences: list[list[str]]


def make_corpus(n_train: int, n_val: int, seed: int, g: Grammar | None = None) -> Corpus:
    g = g or grammar()
    rng = random.Random(seed)
    train = [g.sample(rng) for _ in range(n_train)]
    seen = {tuple(s) for s in train}
    val: list[list[str]] = []
    while len(val) < n_val:
        s = g.sample(rng)
        if tuple(s) not in seen:
            val.append(s)
    tok = Tokenizer.from_words(g.words)
    return Corpus(tok, tok.encode_stream(train), tok.encode_stream(val), val)


def random_windows(stream: np.ndarray, batch_size: int, block_size: int, rng: np.random.Generator):
    """`batch_size` random windows: inputs x (B, T) and next-token targets y (B, T)."""
    if len(stream) <= block_size:
        raise ValueError(f"a stream of {len(stream)} tokens is too short for windows of {block_size} + 1")
    starts = rng.integers(0, len(stream) - block_size, size=batch_size)
    idx = starts[:, None] + np.arange(block_size + 1)  # (B, T + 1)
    chunk = stream[idx]
    return chunk[:, :-1], chunk[:, 1:]


def consecutive_windows(stream: np.ndarray, block_size: int):
    """The stream cut into non-overlapping windows: x (N, T), y (N, T)."""
    n = (len(stream) - 1) // block_size
    if n == 0:
        raise ValueError(f"a stream of {len(stream)} tokens is too short for one window of {block_size} + 1")
    x = stream[: n * block_size].reshape(n, block_size)
    y = stream[1 : n * block_size + 1].reshape(n, block_size)
    return x, y
