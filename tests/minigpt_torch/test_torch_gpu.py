"""The port on CUDA: the Triton LM-head softmax against the CPU path (needs a GPU)."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from minigpt_np import checkpoint
from minigpt_np.corpus import make_corpus
from minigpt_np.lexicon import PAST_SIMPLE
from minigpt_np.sample import continue_batch
from minigpt_torch import checks
from minigpt_torch.adapter import TorchLM
from minigpt_torch.weights import example_inputs, load_pretrained

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def models():
    return load_pretrained(), load_pretrained(device="cuda")


@given(B=st.integers(1, 8), T=st.integers(1, 32), seed=st.integers(0, 2**31 - 1))
def test_triton_head_matches_the_cpu_path(models, B, T, seed):
    cpu, cuda = models
    x = torch.randint(0, cpu.config.vocab_size, (B, T), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        p_cpu = cpu(x)
        p_cuda = torch.full((B, T, cpu.config.vocab_size), float("nan"), device="cuda")
        p_cuda.copy_(cuda(x.cuda()))
    p_cuda = p_cuda.cpu()
    assert torch.isfinite(p_cuda).all()
    assert (p_cuda - p_cpu).abs().max() <= 1e-3
    assert torch.equal(p_cuda.argmax(-1), p_cpu.argmax(-1))


def test_triton_kernel_is_what_runs_on_cuda(models, monkeypatch):
    """The CUDA forward goes through kernels_triton (counted): in place over the logits
    without gradients, out of place with them; the CPU forward does not."""
    import kernels_triton

    calls = []
    for name in ("softmax", "softmax_"):  # with gradients and without (in place)
        real = getattr(kernels_triton, name)
        monkeypatch.setattr(
            kernels_triton,
            name,
            lambda x, dim=-1, real=real, name=name: calls.append((name, x.shape)) or real(x, dim),
        )
    cpu, cuda = models
    with torch.no_grad():
        cuda(example_inputs().cuda())
        cpu(example_inputs())
    shape = torch.Size([2, 16, cpu.config.vocab_size])
    assert calls == [("softmax_", shape)]
    assert any(p.requires_grad for p in cuda.parameters())
    cuda(example_inputs().cuda()).sum().backward()
    assert calls == [("softmax_", shape), ("softmax", shape)]
    cuda.zero_grad(set_to_none=True)


@pytest.mark.parametrize("use_triton", [True, False])
def test_yesterday_i_top5_are_past_simple_on_cuda(models, use_triton):
    _, cuda = models
    tok = checkpoint.load().tokenizer
    cuda.use_triton_softmax = use_triton
    try:
        with torch.no_grad():
            probs = cuda(torch.from_numpy(tok.encode("Yesterday I"))[None].cuda())[0, -1]
    finally:
        cuda.use_triton_softmax = True
    top5 = [tok.vocab[i] for i in torch.topk(probs, 5).indices.tolist()]
    assert all(w in PAST_SIMPLE for w in top5), top5


def test_kernel_swap_check_passes():
    result = checks.kernel_swap_check()
    assert result["passed"] and not result["kernel_swap_changes_top1_token"], result
    assert result["max_prob_diff_vs_cpu"] <= 1e-3


def test_compiled_forward_on_cuda(models):
    _, cuda = models
    x = example_inputs().cuda()
    with torch.no_grad():
        eager, out = cuda(x), torch.compile(cuda, dynamic=False)(x)
    torch.testing.assert_close(out, eager, atol=1e-5, rtol=1e-5)


def test_fp64_on_cuda_uses_torch_softmax_and_matches_numpy():
    model = load_pretrained(torch.float64, device="cuda")
    np_model = checkpoint.load().model.astype(np.float64)
    x = example_inputs()
    with torch.no_grad():
        probs = model(x.cuda()).cpu().numpy()
    assert np.abs(probs - np_model.probs(x.numpy())).max() <= 1e-10


def test_nccl_training_runs_under_torchrun(tmp_path):
    """DDP over NCCL, one process per GPU (up to 2)."""
    out = tmp_path / "nccl.npz"
    nproc = min(2, torch.cuda.device_count())
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc), "-m", "minigpt_torch.cli",
           "train", "--device", "cuda", "--out", str(out), "--steps", "20", "--n-train-sentences", "2000",
           "--n-val-sentences", "50", "--eval-every", "10"]  # fmt: skip
    run = subprocess.run(cmd, env=dict(os.environ), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    ckpt = checkpoint.load(out)
    assert ckpt.meta["device"] == "cuda" and ckpt.meta["world_size"] == nproc
    assert ckpt.meta["val_loss"] < 6.0  # below the untrained ~log(616) = 6.4


@pytest.mark.parametrize("impl", ["triton", "torch"])
@pytest.mark.parametrize("batch", [1, 5])
def test_graphed_steps_match_the_eager_model(models, impl, batch):
    """TorchLM's CUDA graphs against the same model run eagerly: the probabilities at every
    context length (the graph's output poisoned before each replay), past block_size too."""
    _, cuda = models
    cuda.softmax_impl = impl
    try:
        graphed, eager = TorchLM(cuda), TorchLM(cuda, cuda_graphs=False)
        assert graphed.cuda_graphs and not eager.cuda_graphs
        rng = np.random.default_rng(batch)
        for t in (1, 2, 17, cuda.config.block_size, cuda.config.block_size + 3):
            ids = rng.integers(0, cuda.config.vocab_size, (batch, t))
            if graphed._steps:
                graphed._steps[(batch, impl)].probs.fill_(float("nan"))
            p_graph, p_eager = graphed.next_token_probs(ids), eager.next_token_probs(ids)
            assert np.isfinite(p_graph).all()
            assert np.abs(p_graph - p_eager).max() <= 1e-5
            assert (p_graph.argmax(-1) == p_eager.argmax(-1)).all()
        assert list(graphed._steps) == [(batch, impl)]  # one graph for every length
    finally:
        cuda.softmax_impl = "auto"


def test_graphed_greedy_decode_gives_the_eager_tokens(models):
    _, cuda = models
    tok = checkpoint.load().tokenizer
    prompts = np.stack([tok.encode(s[:2]) for s in make_corpus(0, 3, seed=2026).val_sentences])
    lms = (TorchLM(cuda), TorchLM(cuda, cuda_graphs=False))
    decoded = [continue_batch(lm, prompts, tok.ids["."], greedy=True) for lm in lms]
    assert decoded[0] == decoded[1] and all(decoded[0])
