"""The training loop: random windows of the grammar corpus, AdamW with warm-up + cosine
learning rate, global-norm clipping, periodic validation loss, a progress line on
stderr. Everything random comes from `TrainConfig.seed`, so a run is reproducible."""

from __future__ import annotations

import math
import sys
import time
from dataclasses import asdict, dataclass
from typing import TextIO

import numpy as np

from minigpt_np.corpus import Corpus, consecutive_windows, make_corpus, random_windows
from minigpt_np.limits import AT_LEAST_0, AT_LEAST_1, NON_NEGATIVE, POSITIVE, Range
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

    def __post_init__(self):
        for name, value in asdict(self).items():
            if name == "dtype":
                if value not in DTYPES:
                    raise ValueError(f"TrainConfig.dtype must be one of {', '.join(DTYPES)}, got {value!r}")
            else:
                TRAIN_LIMITS[name].check(f"TrainConfig.{name}", value)

    def to_dict(self) -> dict:
        return asdict(self)


DTYPES = ("float32", "float64")
UNIT_INTERVAL = Range(float, 0, 1, high_open=True)
# Every TrainConfig field but dtype: its allowed range and what it means (the CLI's help).
TRAIN_LIMITS: dict[str, Range] = {
    "steps": AT_LEAST_1,
    "batch_size": AT_LEAST_1,
    "block_size": AT_LEAST_1,
    "lr": POSITIVE,
    "min_lr": NON_NEGATIVE,
    "warmup_steps": AT_LEAST_0,
    "weight_decay": NON_NEGATIVE,
    "beta1": UNIT_INTERVAL,
    "beta2": UNIT_INTERVAL,
    "adam_eps": POSITIVE,
    "grad_clip": POSITIVE,
    "seed": AT_LEAST_0,
    "n_train_sentences": AT_LEAST_1,
    "n_val_sentences": AT_LEAST_1,
    "eval_every": AT_LEAST_1,
}
TRAIN_HELP = {
    "steps": "optimizer steps",
    "batch_size": "windows per step (the global batch under torchrun)",
    "block_size": "context length in tokens",
    "lr": "peak learning rate, reached after the warm-up",
    "min_lr": "learning rate at the end of the cosine decay",
    "warmup_steps": "steps of linear warm-up",
    "weight_decay": "AdamW decoupled weight decay (Linear weights only)",
    "beta1": "AdamW first-moment decay",
    "beta2": "AdamW second-moment decay",
    "adam_eps": "AdamW denominator epsilon",
    "grad_clip": "global gradient-norm clipping threshold",
    "seed": "seed of the corpus, the initial weights and the batches",
    "n_train_sentences": "training sentences drawn from the grammar",
    "n_val_sentences": "held-out sentences (validation loss, grammaticality)",
    "eval_every": "validation loss every this many steps (and at the end)",
    "dtype": "parameter dtype",
}


class TrainingDiverged(ValueError):
    pass


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


def clock_text(seconds: float) -> str:
    """1:05 (m:ss) or 2:03:04 (h:mm:ss)."""
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress:
    """Training progress on `out`: step, the caller's text (loss, ...), elapsed time, ETA.

    On a terminal: one line redrawn in place, at most 10 times a second. Otherwise (a CI
    log, a file): a new line at the first step, then at the first step `interval` seconds
    or more after the previous line, and at the last step, so a log is never silent for
    longer than `interval` plus one step, and never floods."""

    def __init__(self, total: int, out: TextIO | None, interval: float = 5.0, clock=time.monotonic):
        self.total, self.out, self.interval, self.clock = total, out, interval, clock
        self.tty = out is not None and out.isatty()
        self.start = clock()
        self.last: float | None = None

    def update(self, step: int, text: str) -> None:
        if self.out is None:
            return
        now, done = self.clock(), step + 1
        wait = 0.1 if self.tty else self.interval
        if done != self.total and self.last is not None and now - self.last < wait:
            return
        self.last = now
        elapsed = now - self.start
        eta = elapsed / done * (self.total - done)
        width = 24
        bar = "#" * (width * done // self.total) + "." * (width - width * done // self.total)
        line = f"[{bar}] {done}/{self.total} {text} | {clock_text(elapsed)} elapsed, ETA {clock_text(eta)}"
        if self.tty:
            self.out.write("\r" + line + ("\n" if done == self.total else ""))
        else:
            self.out.write(line + "\n")
        self.out.flush()


def diverged_message(loss: float, step: int, cfg: TrainConfig) -> str:
    return (
        f"training diverged: the loss is {loss} at step {step + 1} of {cfg.steps}; "
        f"nothing was written (argument --lr: {cfg.lr:g} may be too large)"
    )


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
    # A diverging run overflows somewhere before its loss turns non-finite; the loss check
    # below reports it as one error, so NumPy's per-operation warnings are silenced.
    with np.errstate(all="ignore"):
        for step in range(cfg.steps):
            x, y = random_windows(corpus.train, cfg.batch_size, cfg.block_size, rng)
            loss, grads = model.loss_and_grads(x, y)
            clip_grad_norm(grads, cfg.grad_clip)
            lr = lr_at(
                step, max_lr=cfg.lr, min_lr=cfg.min_lr, warmup_steps=cfg.warmup_steps, total_steps=cfg.steps
            )
            if not math.isfinite(loss):
                raise TrainingDiverged(diverged_message(loss, step, cfg))
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
