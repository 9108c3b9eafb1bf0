"""The training loop: random windows of the grammar corpus, AdamW with warm-up + cosine
learning rate, global-norm clipping, periodic validation loss, a progress line on
stderr. Everything random comes from `TrainConfig.seed`, so a run is reproducible."""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass
from typing import TextIO

import numpy as np

from minigpt_np.corpus import Corpus, consecutive_windows, make_corpus, random_windows
from minigpt_np.model import GPTConfig, MiniGPT
from minigpt_np.optim import AdamW, AdamWConfig, clip_grad_norm, lr_at


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 3000
    batch_size: int = 32
    block_size: int = 32
    lr: float = 6e-3
    min_lr: float = 6e-4
    warmup_steps: int = 200
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    adam_eps: float = 1e-8
    grad_clip: float = 1.0
    seed: int = 1337
    n_train_sentences: int = 100_000
    n_val_sentences: int = 1_000
    eval_every: int = 500
    dtype: str = "float32"

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TrainResult:
    model: MiniGPT
    corpus: Corpus
    losses: list[float]  # training loss per step
    val_losses: dict[int, float]  # step -> validation loss
    seconds: float
    tokens_per_s: float


def validation_loss(model: MiniGPT, stream: np.ndarray, batch_size: int = 64) -> float:
    """Mean next-token cross-entropy over the stream cut into context-length windows."""
    x, y = consecutive_windows(stream, model.config.block_size)
    total = sum(model.loss(x[i : i + batch_size], y[i : i + batch_size]) * len(x[i : i + batch_size])
                for i in range(0, len(x), batch_size))  # fmt: skip
    return total / len(x)


class Progress:
    """One status line on `out`, redrawn in place on a terminal and printed every
    `every` steps otherwise (so logs stay readable)."""

    def __init__(self, total: int, out: TextIO | None, every: int = 100):
        self.total, self.out, self.every = total, out, every
        self.tty = out is not None and out.isatty()

    def update(self, step: int, text: str) -> None:
        if self.out is None:
            return
        done = step + 1
        width = 24
        bar = "#" * (width * done // self.total) + "." * (width - width * done // self.total)
        line = f"[{bar}] {done}/{self.total} {text}"
        if self.tty:
            self.out.write("\r" + line + ("\n" if done == self.total else ""))
        elif done % self.every == 0 or done == self.total:
            self.out.write(line + "\n")
        self.out.flush()


def train(cfg: TrainConfig, progress: TextIO | None = sys.stderr) -> TrainResult:
    corpus = make_corpus(cfg.n_train_sentences, cfg.n_val_sentences, cfg.seed)
    config = GPTConfig(vocab_size=len(corpus.tokenizer), block_size=cfg.block_size)
    model = MiniGPT.init(config, seed=cfg.seed, dtype=np.dtype(cfg.dtype))
    adam = AdamWConfig(
        lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.adam_eps, weight_decay=cfg.weight_decay
    )
    opt = AdamW(model.params, adam)
    rng = np.random.default_rng(cfg.seed)
    bar = Progress(cfg.steps, progress)
    losses: list[float] = []
    val_losses: dict[int, float] = {}
    t0 = time.perf_counter()
    for step in range(cfg.steps):
        x, y = random_windows(corpus.train, cfg.batch_size, cfg.block_size, rng)
        loss, grads = model.loss_and_grads(x, y)
        clip_grad_norm(grads, cfg.grad_clip)
        lr = lr_at(
            step, max_lr=cfg.lr, min_lr=cfg.min_lr, warmup_steps=cfg.warmup_steps, total_steps=cfg.steps
        )
        opt.step(grads, lr)
        losses.append(loss)
        if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
            val_losses[step + 1] = validation_loss(model, corpus.val)
        elapsed = time.perf_counter() - t0
        tok_s = (step + 1) * cfg.batch_size * cfg.block_size / elapsed
        val = f" | val {val_losses[max(val_losses)]:.3f}" if val_losses else ""
        bar.update(step, f"| loss {loss:.3f}{val} | lr {lr:.2e} | {tok_s / 1e3:.1f}k tok/s")
    seconds = time.perf_counter() - t0
    tokens = cfg.steps * cfg.batch_size * cfg.block_size
    return TrainResult(model, corpus, losses, val_losses, seconds, tokens / seconds)
