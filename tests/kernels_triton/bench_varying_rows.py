"""A loop whose row count changes every call (decoding without a KV cache, packed or dynamic
batches): row counts 1 to 20,000 of 600 fp32 columns in a shuffled order a round,
kernels_triton.softmax against F.softmax. kernels_triton keeps one template a layout and the
last row count's arguments (launch.py), so every call costs what a new row count's does. Stores the
time a call in extra_info (us_per_call) and the growth of the process's resident memory over
the rounds (rss_growth_mb), which stays flat. GPU only.

    scripts/test-in-place tests/kernels_triton/bench_varying_rows.py --benchmark-only --benchmark-json=out/varying.json
"""

from __future__ import annotations

import random

import pytest
import torch
import torch.nn.functional as F

CALLS = 20_000
N = 600
ROUNDS = 5


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


@pytest.mark.gpu
@pytest.mark.parametrize("impl", ["kernels_triton", "torch"])
def test_varying_row_counts(benchmark, impl):
    import kernels_triton

    fn = kernels_triton.softmax if impl == "kernels_triton" else lambda t: F.softmax(t, dim=-1)
    x = torch.randn(CALLS, N, device="cuda")
    fn(x[:7])  # the first launch of the process: compiling is not what this measures
    torch.cuda.synchronize()
    counts = list(range(1, CALLS + 1))
    rounds = iter(range(ROUNDS))

    def new_row_counts():
        """The order shuffled afresh."""
        random.Random(next(rounds)).shuffle(counts)

    def one_round():
        for m in counts:
            fn(x[:m])
        torch.cuda.synchronize()

    before = rss_mb()
    benchmark.pedantic(one_round, setup=new_row_counts, rounds=ROUNDS, iterations=1, warmup_rounds=0)
    growth = rss_mb() - before
    us = benchmark.stats.stats.median / CALLS * 1e6
    benchmark.extra_info.update(us_per_call=round(us, 2), rss_growth_mb=round(growth, 1), calls=CALLS, N=N)
    assert growth <= 50, f"resident memory grew {growth:.0f} MB over {ROUNDS * CALLS} row counts"
