"""DDP: two processes under torchrun take the same steps as one process on the whole
batch; gloo on the CPU (always), NCCL on two GPUs (gpu-marked, skipped with fewer).

Every rank draws the same global batch and trains on its half; DDP averages the two
halves' gradients, which is the whole batch's gradient up to fp32 rounding. Adam divides
each gradient by its own running RMS, so for an element whose true gradient is ~0 (the
key bias's is exactly 0) rounding noise alone would move it by up to lr per step: these
tests use adam_eps = 1e-5, which leaves every real gradient's step unchanged and keeps
noise-level gradients from being amplified, so the comparison can be at 1e-6 (gloo) and
1e-5 (NCCL: other kernels and reduction orders for half-size GEMMs than for the whole).

With MINIGPT_DDP_REPORT=path, the NCCL test writes its figures (max difference, GPUs,
versions) there as JSON."""

import datetime
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from minigpt_np import checkpoint
from minigpt_np._atomic import atomic_write_text
from minigpt_np.model import MiniGPT
from minigpt_np.train import TrainConfig
from minigpt_torch.train import train
from minigpt_torch.weights import to_numpy

CFG = TrainConfig(steps=3, batch_size=8, block_size=16, warmup_steps=1, adam_eps=1e-5,
                  n_train_sentences=500, n_val_sentences=20, eval_every=3)  # fmt: skip
GLOO_TOL = 1e-6
NCCL_TOL = 1e-5


def cli_flags(cfg: TrainConfig) -> list[str]:
    return [a for k, v in cfg.to_dict().items() for a in (f"--{k.replace('_', '-')}", str(v))]


def torchrun_two(out, device: str) -> checkpoint.Checkpoint:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "-m", "minigpt_torch.cli",
           "train", "--device", device, "--out", str(out), *cli_flags(CFG)]  # fmt: skip
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    ddp = checkpoint.load(out)
    assert ddp.meta["world_size"] == 2 and ddp.meta["command"].startswith("torchrun --nproc-per-node 2")
    assert ddp.meta["device"] == device
    return ddp


def compare(ddp: checkpoint.Checkpoint, single: MiniGPT, tol: float) -> tuple[float, float]:
    """(largest |ddp - single| over all parameters, largest move from the initial weights)."""
    start = MiniGPT.init(ddp.model.config, seed=CFG.seed)  # what train() starts from
    worst, moved = 0.0, 0.0
    for name, p in single.params.items():
        diff = float(np.abs(ddp.model.params[name] - p).max())
        assert diff <= tol, (name, diff)
        worst = max(worst, diff)
        moved = max(moved, float(np.abs(p - start.params[name]).max()))
    assert moved > 1e-3  # three real steps were taken
    return worst, moved


def test_two_gloo_processes_equal_one_process(tmp_path):
    ddp = torchrun_two(tmp_path / "ddp.npz", "cpu")
    compare(ddp, to_numpy(train(CFG, progress=None).model), GLOO_TOL)


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA devices")
def test_two_nccl_processes_equal_one_process(tmp_path):
    ddp = torchrun_two(tmp_path / "nccl.npz", "cuda")
    worst, moved = compare(ddp, to_numpy(train(CFG, device="cuda", progress=None).model), NCCL_TOL)
    report = os.environ.get("MINIGPT_DDP_REPORT")
    if report:
        result = {
            "test": "tests/minigpt_torch/test_torch_ddp.py::test_two_nccl_processes_equal_one_process",
            "max_abs_param_diff_ddp_vs_single": worst, "tolerance": NCCL_TOL, "max_param_move": moved,
            "train_config": CFG.to_dict(), "gpus": [torch.cuda.get_device_name(i) for i in range(2)],
            "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        }  # fmt: skip
        atomic_write_text(report, json.dumps(result, indent=2) + "\n")
