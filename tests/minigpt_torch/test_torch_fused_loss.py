"""MiniGPT's training loss through kernels_triton.cross_entropy (the default on CUDA) against
F.cross_entropy (--loss torch): one step's loss and gradients agree to 1e-6 in fp32, a short
training curve matches, and the training command reports tokens/s and peak memory for the
loss it used. On the CPU the fused loss runs under Triton's interpreter."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from minigpt_np.train import TrainConfig
from minigpt_torch import model as model_module
from minigpt_torch.cli import main
from minigpt_torch.train import loss_in_use, train
from minigpt_torch.weights import load_pretrained

STEP_TOL = 1e-6  # fp32: |loss and every gradient element, fused - F.cross_entropy|


def one_step(model, x, y, loss_impl: str):
    model.loss_impl = loss_impl
    model.zero_grad(set_to_none=True)
    loss = model(x, y)
    loss.backward()
    return loss.detach(), {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def assert_step_equal(device: str, calls: list):
    model = load_pretrained(device=device).train()
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0, model.config.vocab_size, (4, 16), generator=g).to(device)
    y = torch.randint(0, model.config.vocab_size, (4, 16), generator=g).to(device)
    loss_t, grads_t = one_step(model, x, y, "torch")
    assert calls == []
    loss_f, grads_f = one_step(model, x, y, "fused")
    assert calls, "the fused loss did not run kernels_triton.cross_entropy"
    assert abs(loss_f.item() - loss_t.item()) <= STEP_TOL
    for name, grad in grads_t.items():
        err = (grads_f[name] - grad).abs().max().item()
        assert err <= STEP_TOL, f"{name}: {err}"


@pytest.fixture
def counted(monkeypatch):
    """kernels_triton.cross_entropy, counting its calls."""
    import kernels_triton

    calls = []
    real = kernels_triton.cross_entropy

    def counting(*args, **kwargs):
        calls.append(kwargs.get("inplace_backward"))
        return real(*args, **kwargs)

    monkeypatch.setattr(kernels_triton, "cross_entropy", counting)
    return calls


def test_one_step_equals_f_cross_entropy_on_the_cpu(counted):
    assert_step_equal("cpu", counted)
    assert counted == [True]  # training writes the gradient over the logits


def test_loss_choice_and_errors(monkeypatch, tmp_path, capsys):
    assert loss_in_use("auto", torch.device("cpu")) == "torch"
    assert loss_in_use("fused", torch.device("cpu")) == "fused"
    with pytest.raises(ValueError, match="loss impl"):
        model_module.lm_loss(torch.zeros(2, 3), torch.zeros(2, dtype=torch.long), "cuda-magic")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert main(["train", "--out", str(tmp_path / "m.npz"), "--loss", "fused", "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--loss" in err[0] and "TRITON_INTERPRET=1" in err[0]
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--out", str(tmp_path / "m.npz"), "--loss", "numpy"])
    assert exit_.value.code == 2


def test_train_reports_the_loss_used(tmp_path, capsys):
    out = tmp_path / "t.npz"
    argv = ["train", "--out", str(out), "--loss", "torch", "--steps", "2", "--batch-size", "2", "--block-size",
            "8", "--n-train-sentences", "100", "--n-val-sentences", "10", "--eval-every", "1"]  # fmt: skip
    assert main(argv) == 0
    meta = json.loads(capsys.readouterr().out)
    assert meta["loss"] == "torch" and meta["peak_memory_bytes"] is None and meta["tokens_per_s"] > 0


@pytest.mark.gpu
def test_one_step_equals_f_cross_entropy_on_cuda(counted):
    assert_step_equal("cuda", counted)


@pytest.mark.gpu
def test_training_curves_match_and_report_speed_and_memory(capsys):
    """40 steps each way from the same initial weights and batches: the curves agree to
    fp32 drift; tokens/s and peak memory are printed for both (pytest -s shows them). Two runs
    of each, in the order fused, torch, torch, fused: a 40-step run is under a second, and the
    host's speed drifts between runs by more than the two losses differ, so one pair would
    print the drift. A short run of each first: the first training in a process also allocates
    what the process keeps (cuBLAS's workspace, the kernels' caches), which is no loss's peak."""
    cfg = TrainConfig(steps=40, batch_size=64, block_size=32, n_train_sentences=5000, n_val_sentences=50,
                      eval_every=40, warmup_steps=5)  # fmt: skip
    for loss in ("fused", "torch"):
        train(dataclasses.replace(cfg, steps=2, eval_every=2), device="cuda", progress=None, loss=loss)
    runs = [
        train(cfg, device="cuda", progress=None, loss=loss) for loss in ("fused", "torch", "torch", "fused")
    ]
    assert [r.loss_impl for r in runs] == ["fused", "torch", "torch", "fused"]
    fused, torch_ = runs[0], runs[1]
    drift = max(abs(a - b) for a, b in zip(fused.losses, torch_.losses, strict=True))
    assert drift <= 1e-3, drift
    assert fused.losses[-1] < fused.losses[0] - 0.5  # it learns
    for impl in ("fused", "torch"):
        mine = [r for r in runs if r.loss_impl == impl]
        assert all(r.peak_memory_bytes and r.peak_memory_bytes > 0 for r in mine)
        speeds = ", ".join(f"{r.tokens_per_s:,.0f}" for r in mine)
        print(f"loss {impl}: {speeds} tokens/s, peak {mine[0].peak_memory_bytes / 2**20:.1f} MiB")
    assert max(r.peak_memory_bytes for r in runs[::3]) <= min(r.peak_memory_bytes for r in runs[1:3])
