"""A loop whose row count changes every call: 20,000 distinct row counts of 600 fp32 columns,
kernels_cuda.softmax against F.softmax (call time per call, host memory growth).

    scripts/test-in-place tests/kernels_cuda/bench_cuda_varying_rows.py --benchmark-only

Each new row count takes its (N, dtype, layout) row plan's packed launch with the row count and
grid written in (softmax_variants.RowsCall): no planning, no packing, no new cache entry.
"""

from __future__ import annotations

import resource

import pytest

pytestmark = pytest.mark.gpu

N, CALLS = 600, 20_000


@pytest.fixture(scope="module")
def inputs():
    import torch

    base = torch.randn(CALLS + 1, N, device="cuda")
    return [base[: m + 1] for m in range(CALLS)]  # views: row counts 1 .. 20,000, no allocation per call


def _loop(fn, xs):
    for x in xs:
        fn(x)
    import torch

    torch.cuda.synchronize()


@pytest.mark.parametrize("impl", ["kernels_cuda", "F.softmax"])
def test_varying_row_counts(benchmark, impl, inputs):
    import kernels_cuda
    import torch

    fn = kernels_cuda.softmax if impl == "kernels_cuda" else (lambda x: torch.softmax(x, -1))
    fn(inputs[0])  # the row plan (and the kernel) once, as any first call
    torch.cuda.synchronize()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    benchmark.pedantic(_loop, args=(fn, inputs), rounds=3, iterations=1)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
    per_call_us = benchmark.stats.stats.median / CALLS * 1e6
    benchmark.extra_info.update(per_call_us=per_call_us, host_rss_growth_mb=grown_mb)
    print(
        f"\n{impl}: {per_call_us:.1f} us a call over {CALLS} row counts of {N}; host RSS +{grown_mb:.1f} MB"
    )
    assert grown_mb <= 50
