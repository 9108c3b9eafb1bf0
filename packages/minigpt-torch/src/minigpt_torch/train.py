"""Training GrammarMiniGPT with torch: one process, or N under torchrun with DDP.

The recipe is minigpt-np's, step for step: the same corpus, initial weights (minigpt-np's
initialisation, copied in), batches, warm-up + cosine schedule, global-norm clipping and
AdamW with weight decay on the Linear weights only.

Distributed: every rank draws the same global batch of `batch_size` windows and trains
on its own contiguous shard of batch_size / world_size rows; DDP averages the gradients,
so N processes take exactly the step one process takes on the whole batch. Backend: gloo
on the CPU, NCCL on GPUs (one per rank, LOCAL_RANK).

    torchrun --nproc-per-node 2 -m minigpt_torch.cli train --out m.npz
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass
from typing import TextIO

import numpy as np
import torch
import torch.distributed as dist
from minigpt_np.corpus import Corpus, make_corpus, random_windows
from minigpt_np.model import GPTConfig, MiniGPT
from minigpt_np.optim import decays, lr_at
from minigpt_np.train import Progress, TrainConfig, TrainingDiverged, diverged_message, validation_loss
from torch.nn.parallel import DistributedDataParallel

from minigpt_torch.adapter import TorchLM
from minigpt_torch.model import GrammarMiniGPT, triton_module
from minigpt_torch.weights import from_numpy, name_map


@dataclass
class TorchTrainResult:
    model: GrammarMiniGPT  # on its training device
    corpus: Corpus
    losses: list[float]  # the global batch's mean loss per step
    val_losses: dict[int, float]
    seconds: float
    tokens_per_s: float  # the steps after the first (it compiles), validation excluded
    rank: int
    world_size: int
    loss_impl: str = "torch"  # what computed the loss: "fused" (kernels_triton) or "torch"
    peak_memory_bytes: int | None = None  # peak allocated in training beyond what was held before; CPU: None


def adamw(model: GrammarMiniGPT, cfg: TrainConfig) -> torch.optim.AdamW:
    """torch.optim.AdamW with minigpt-np's weight-decay split (`minigpt_np.optim.decays`)."""
    params = dict(model.named_parameters())
    groups: dict[bool, list] = {True: [], False: []}
    for np_name, torch_name in name_map(model.config).items():
        groups[decays(np_name, tuple(params[torch_name].shape))].append(params[torch_name])
    return torch.optim.AdamW(
        [{"params": groups[True], "weight_decay": cfg.weight_decay}, {"params": groups[False], "weight_decay": 0.0}],
        lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.adam_eps,
    )  # fmt: skip


def init_distributed(device: str) -> tuple[int, int, torch.device]:
    """(rank, world size, this rank's device); starts the process group under torchrun."""
    if "RANK" not in os.environ:
        return 0, 1, torch.device(device)
    if device == "cuda":
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        return dist.get_rank(), dist.get_world_size(), torch.device("cuda", local_rank)
    dist.init_process_group("gloo")
    return dist.get_rank(), dist.get_world_size(), torch.device(device)


def loss_in_use(loss: str, device: torch.device) -> str:
    """The loss `loss` ("auto", "fused", "torch") resolves to on `device`: "auto" is the fused
    cross-entropy on CUDA when kernels_triton is importable, F.cross_entropy otherwise."""
    if loss != "auto":
        return loss
    return "fused" if device.type == "cuda" and triton_module() is not None else "torch"


def train(
    cfg: TrainConfig, device: str = "cpu", progress: TextIO | None = sys.stderr, loss: str = "auto"
) -> TorchTrainResult:
    """Train (under torchrun: this rank's part of it). Rank 0 reports progress and
    validation loss. `loss`: the training loss, "fused" (kernels_triton.cross_entropy),
    "torch" (F.cross_entropy) or "auto" (fused on CUDA, torch on the CPU)."""
    rank, world, dev = init_distributed(device)
    if cfg.batch_size % world:
        raise ValueError(f"batch_size {cfg.batch_size} is not divisible by the {world} processes")
    shard = slice(rank * cfg.batch_size // world, (rank + 1) * cfg.batch_size // world)

    corpus = make_corpus(cfg.n_train_sentences, cfg.n_val_sentences, cfg.seed)
    config = GPTConfig(vocab_size=len(corpus.tokenizer), block_size=cfg.block_size)
    if dev.type == "cuda":  # the peak counts what training allocates, not what the process held before
        torch.cuda.reset_peak_memory_stats(dev)
        held_before = torch.cuda.memory_allocated(dev)
    model = from_numpy(MiniGPT.init(config, seed=cfg.seed, dtype=np.dtype(cfg.dtype))).to(dev).train()
    model.loss_impl = loss_in_use(loss, dev)
    step_model = DistributedDataParallel(model) if dist.is_initialized() else model
    opt = adamw(model, cfg)
    rng = np.random.default_rng(cfg.seed)
    bar = Progress(cfg.steps, progress if rank == 0 else None)
    losses: list[float] = []
    val_losses: dict[int, float] = {}
    t0 = time.perf_counter()
    train_s = 0.0  # the steps after the first, each to its loss on the host, validation excluded
    for step in range(cfg.steps):
        step_t0 = time.perf_counter()
        x, y = random_windows(corpus.train, cfg.batch_size, cfg.block_size, rng)  # the global batch
        x, y = (torch.from_numpy(a[shard]).to(dev) for a in (x, y))
        loss = step_model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        lr = lr_at(
            step, max_lr=cfg.lr, min_lr=cfg.min_lr, warmup_steps=cfg.warmup_steps, total_steps=cfg.steps
        )
        for group in opt.param_groups:
            group["lr"] = lr
        opt.step()
        loss = loss.detach()
        if world > 1:
            dist.all_reduce(loss)  # sum of the shards' means; gloo has no AVG
            loss /= world
        losses.append(loss.item())
        if step:  # (loss.item() waited for the step) the first compiles and loads kernels
            train_s += time.perf_counter() - step_t0
        if not math.isfinite(losses[-1]):  # the same on every rank: the loss is all-reduced
            raise TrainingDiverged(diverged_message(losses[-1], step, cfg))
        if rank == 0 and ((step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps):
            val_losses[step + 1] = validation_loss(TorchLM(model), corpus.val)
        tok_s = (step + 1) * cfg.batch_size * cfg.block_size / (time.perf_counter() - t0)
        val = f" | val {val_losses[max(val_losses)]:.3f}" if val_losses else ""
        bar.update(step, f"| loss {losses[-1]:.3f}{val} | lr {lr:.2e} | {tok_s / 1e3:.1f}k tok/s")
    seconds = time.perf_counter() - t0
    timed_steps, timed_s = (cfg.steps - 1, train_s) if cfg.steps > 1 else (cfg.steps, seconds)
    peak = torch.cuda.max_memory_allocated(dev) - held_before if dev.type == "cuda" else None
    return TorchTrainResult(model, corpus, losses, val_losses, seconds,
                            timed_steps * cfg.batch_size * cfg.block_size / timed_s, rank, world,
                            model.loss_impl, peak)  # fmt: skip
