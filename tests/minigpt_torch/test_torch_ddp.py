"""DDP: a 2-process gloo run under torchrun takes the same steps as one process on the
concatenated batches.

Every rank draws the same global batch and trains on its half; DDP averages the two
halves' gradients, which is the whole batch's gradient up to fp32 rounding. Adam divides
each gradient by its own running RMS, so for an element whose true gradient is ~0 (the
key bias's is exactly 0) rounding noise alone would move it by up to lr per step: this
test uses adam_eps = 1e-5, which leaves every real gradient's step unchanged and keeps
noise-level gradients from being amplified, so the comparison can be at 1e-6."""

import os
import subprocess
import sys

import numpy as np
from minigpt_np import checkpoint
from minigpt_np.model import MiniGPT
from minigpt_np.train import TrainConfig
from minigpt_torch.train import train
from minigpt_torch.weights import to_numpy

CFG = TrainConfig(steps=3, batch_size=8, block_size=16, warmup_steps=1, adam_eps=1e-5,
                  n_train_sentences=500, n_val_sentences=20, eval_every=3)  # fmt: skip


def cli_flags(cfg: TrainConfig) -> list[str]:
    return [a for k, v in cfg.to_dict().items() for a in (f"--{k.replace('_', '-')}", str(v))]


def test_two_gloo_processes_equal_one_process(tmp_path):
    out = tmp_path / "ddp.npz"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "-m", "minigpt_torch.cli",
           "train", "--out", str(out), *cli_flags(CFG)]  # fmt: skip
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    ddp = checkpoint.load(out)
    assert ddp.meta["world_size"] == 2 and ddp.meta["command"].startswith("torchrun --nproc-per-node 2")

    single = to_numpy(train(CFG, progress=None).model)
    start = MiniGPT.init(ddp.model.config, seed=CFG.seed)  # what train() starts from
    moved = 0.0
    for name, p in single.params.items():
        assert np.abs(ddp.model.params[name] - p).max() <= 1e-6, name
        moved = max(moved, float(np.abs(p - start.params[name]).max()))
    assert moved > 1e-3  # three real steps were taken
