"""Using a trained model: next-word top-k, greedy / sampled generation, and the
grammaticality check of what it generates.

Grammaticality rate: for held-out sentences cut at a random point (anywhere from just
"<bos>" to all words but the final "."), the model continues the prefix by sampling at
temperature 1 until it writes "."; the rate is the fraction of prefix + continuation
that the corpus grammar accepts as a complete sentence (`Grammar.accepts`). A
continuation that does not end within `max_new_tokens` counts as ungrammatical.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from minigpt_np.grammar import Grammar, grammar
from minigpt_np.tokenizer import Tokenizer

END = "."


class LanguageModel(Protocol):
    """What sampling needs of a model: the NumPy MiniGPT, or the PyTorch port behind an
    adapter (minigpt_torch.adapter.TorchLM)."""

    def next_token_probs(self, idx: np.ndarray) -> np.ndarray:
        """(B, T) int ids -> (B, V) probabilities of the next token."""
        ...


def topk(model: LanguageModel, tokenizer: Tokenizer, prompt: str, k: int = 5) -> list[tuple[str, float]]:
    """The k most likely next words after `prompt` (preceded by <bos>), most likely first."""
    if not 1 <= k <= len(tokenizer):
        raise ValueError(f"k must be in [1, {len(tokenizer)}], got {k}")
    probs = model.next_token_probs(tokenizer.encode(prompt)[None])[0]
    order = np.argsort(-probs, kind="stable")[:k]
    return [(tokenizer.vocab[i], float(probs[i])) for i in order]


def continue_batch(
    model: LanguageModel,
    idx: np.ndarray,
    stop_id: int,
    *,
    max_new_tokens: int = 24,
    greedy: bool = False,
    temperature: float = 1.0,
    rng: np.random.Generator | None = None,
) -> list[list[int]]:
    """Extend every row of idx (B, T0) until it emits `stop_id` (kept) or has
    `max_new_tokens` new tokens; return each row's new tokens."""
    if not greedy and (rng is None or not (math.isfinite(temperature) and temperature > 0)):
        raise ValueError(f"sampling needs an rng and a finite temperature > 0, got {temperature!r}")
    B = idx.shape[0]
    done = np.zeros(B, dtype=bool)
    new: list[list[int]] = [[] for _ in range(B)]
    for _ in range(max_new_tokens):
        probs = model.next_token_probs(idx)
        if greedy:
            nxt = probs.argmax(axis=-1)
        else:
            p = probs.astype(np.float64)
            if temperature != 1.0:
                # p ** (1 / T) in log space, shifted so the largest weight is 1: never all
                # zero (nor inf) however small or large T is.
                with np.errstate(divide="ignore"):
                    logp = np.log(p) / temperature
                p = np.exp(logp - logp.max(axis=-1, keepdims=True))
            cdf = np.cumsum(p / p.sum(axis=-1, keepdims=True), axis=-1)
            u = rng.random((B, 1))
            nxt = np.minimum((cdf < u).sum(axis=-1), probs.shape[-1] - 1)  # inverse CDF
        for b in np.flatnonzero(~done):
            new[b].append(int(nxt[b]))
        done |= nxt == stop_id
        if done.all():
            break
        idx = np.concatenate([idx, nxt[:, None]], axis=1)
    return new


def generate(
    model: LanguageModel,
    tokenizer: Tokenizer,
    prompt: str,
    *,
    greedy: bool = True,
    temperature: float = 1.0,
    seed: int = 0,
    max_new_tokens: int = 24,
) -> str:
    """The prompt continued to the end of its sentence."""
    rng = None if greedy else np.random.default_rng(seed)
    ids = continue_batch(model, tokenizer.encode(prompt)[None], tokenizer.ids[END],
                         max_new_tokens=max_new_tokens, greedy=greedy, temperature=temperature, rng=rng)[0]  # fmt: skip
    return " ".join([*prompt.split(), *(tokenizer.vocab[i] for i in ids)])


@dataclass
class GrammarReport:
    rate: float
    n: int
    ungrammatical: list[str]  # the sentences the grammar rejected

    def to_dict(self, examples: int = 10) -> dict:
        return {"rate": self.rate, "n": self.n, "ungrammatical_examples": self.ungrammatical[:examples]}


def grammatical_rate(
    model: LanguageModel,
    tokenizer: Tokenizer,
    sentences: list[list[str]],
    *,
    seed: int = 0,
    max_new_tokens: int = 24,
    g: Grammar | None = None,
) -> GrammarReport:
    """See the module docstring. Prefixes of one length are continued as one batch."""
    g = g or grammar()
    rng = np.random.default_rng(seed)
    by_length: dict[int, list[list[str]]] = defaultdict(list)
    for s in sentences:
        cut = int(rng.integers(0, len(s)))  # keep s[:cut]; the final "." is never kept
        by_length[cut].append(s[:cut])
    stop = tokenizer.ids[END]
    n_ok, bad = 0, []
    for cut in sorted(by_length):
        prefixes = by_length[cut]
        idx = np.stack([tokenizer.encode(p) for p in prefixes])  # (B, cut + 1)
        for prefix, ids in zip(
            prefixes, continue_batch(model, idx, stop, max_new_tokens=max_new_tokens, rng=rng)
        ):
            words = prefix + [tokenizer.vocab[i] for i in ids]
            if words[-1] == END and g.accepts(words):
                n_ok += 1
            else:
                bad.append(" ".join(words))
    return GrammarReport(n_ok / len(sentences), len(sentences), bad)
