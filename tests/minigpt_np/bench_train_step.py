"""One training step of the NumPy MiniGPT (forward + backward + clipping + AdamW) at
batch 32 x context 32, the card model, float32; tokens/s in extra_info.

NumPy's BLAS threads are fixed when NumPy loads; to measure what `minigpt-np train` runs
(one thread), run with OPENBLAS_NUM_THREADS=1 (recorded in extra_info)."""

import os

import numpy as np
from labtools.bench import into_pytest_benchmark, time_cpu
from minigpt_np.model import GPTConfig, MiniGPT
from minigpt_np.optim import AdamW, clip_grad_norm

B, T = 32, 32


def test_numpy_train_step(benchmark):
    model = MiniGPT.init(GPTConfig(block_size=T), seed=0)
    opt = AdamW(model.params)
    rng = np.random.default_rng(0)
    batches = [tuple(rng.integers(0, model.config.vocab_size, (2, B, T))) for _ in range(4)]

    def step(x, y):
        _, grads = model.loss_and_grads(x, y)
        clip_grad_norm(grads, 1.0)
        opt.step(grads)

    timing = time_cpu(step, batches, time_cap_s=5.0)
    into_pytest_benchmark(benchmark, timing)
    benchmark.extra_info.update({"batch": B, "context": T, "tokens_per_s": B * T / (timing.median_us * 1e-6),
                                 "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "unset")})  # fmt: skip
