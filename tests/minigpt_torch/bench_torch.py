"""Benchmarks of the PyTorch port, through labtools' timing harness.

- one CPU training step (forward + backward + clipping + AdamW), eager, batch 32 x
  context 32, float32: beside tests/minigpt_np/bench_train_step.py's NumPy step;
- GPU forward latency of the shipped model, with the Triton LM-head softmax and with
  torch's (`use_triton_softmax = False`).
"""

import numpy as np
import pytest
import torch
from labtools.bench import into_pytest_benchmark, time_cpu, time_cuda
from minigpt_np.model import GPTConfig, MiniGPT
from minigpt_np.train import TrainConfig
from minigpt_torch.train import adamw
from minigpt_torch.weights import example_inputs, from_numpy, load_pretrained

B, T = 32, 32


def test_torch_cpu_eager_train_step(benchmark):
    model = from_numpy(MiniGPT.init(GPTConfig(block_size=T), seed=0)).train()
    opt = adamw(model, TrainConfig())
    g = torch.Generator().manual_seed(0)
    batches = [tuple(torch.randint(0, model.config.vocab_size, (2, B, T), generator=g)) for _ in range(4)]

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        model(x, y).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    timing = time_cpu(step, batches, time_cap_s=5.0)
    into_pytest_benchmark(benchmark, timing)
    benchmark.extra_info.update({"batch": B, "context": T, "threads": torch.get_num_threads(),
                                 "tokens_per_s": B * T / (timing.median_us * 1e-6)})  # fmt: skip


@pytest.mark.gpu
@pytest.mark.parametrize("use_triton", [True, False], ids=["triton_head", "torch_head"])
@pytest.mark.parametrize("batch", [1, 64])
def test_gpu_forward_latency(benchmark, use_triton, batch):
    model = load_pretrained(device="cuda")
    model.use_triton_softmax = use_triton
    arg_sets = [(example_inputs(batch=batch, seq=32, seed=s).cuda(),) for s in range(4)]

    @torch.no_grad()
    def forward(x):
        return model(x)

    timing = time_cuda(forward, arg_sets)
    into_pytest_benchmark(benchmark, timing)
    benchmark.extra_info.update({"batch": batch, "context": 32, "lm_head_softmax": "triton" if use_triton else "torch",
                                 "device": torch.cuda.get_device_name()})  # fmt: skip
    assert np.isfinite(timing.median_us)
