"""GPU benchmarks of every kernels_cuda softmax variant at a few of the sweep's shapes, fp32 and bf16,
through labtools' harness (device events, L2 flushed, inputs rotated). Each record carries the
fraction of the copy bandwidth measured in the same session and the ratio to torch's F.softmax.

    scripts/test-in-place tests/kernels_cuda/bench_cuda_softmax.py --benchmark-only --benchmark-json=out.json

Only the shapes each variant is designed for are collected (its registry `supports`).
The full sweep is `lab bench softmax`.
"""

from __future__ import annotations

import pytest
from labtools import bench, registry

pytestmark = pytest.mark.gpu

SHAPES = [(4096, 600), (65536, 600), (32768, 1024), (16384, 4096), (4096, 32768), (256, 262144)]
DTYPES = ["float32", "bfloat16"]
IMPLS = ["cuda.v1_naive", "cuda.v2_shared", "cuda.v3_fused", "cuda.v4_cluster", "cuda.v4_online", "cuda.auto"]
CASES = [
    pytest.param(name, shape, dtype, id=f"{name}-{shape[0]}x{shape[1]}-{dtype}")
    for name in IMPLS
    for shape in SHAPES
    for dtype in DTYPES
    if registry.get(name).accepts(shape, dtype)
]


@pytest.fixture(scope="module")
def copy_gbps() -> float:
    from labtools.ceilings import measure_copy

    return measure_copy()


_torch_records: dict = {}


def _torch_softmax(shape, dtype) -> bench.BenchRecord:
    key = (shape, dtype)
    if key not in _torch_records:
        _torch_records[key] = bench.measure(registry.get("torch.softmax.cuda"), shape, dtype)
    return _torch_records[key]


@pytest.mark.parametrize("name,shape,dtype", CASES)
def test_softmax(benchmark, name, shape, dtype, copy_gbps):
    rec = bench.bench(
        benchmark,
        registry.get(name),
        shape,
        dtype,
        copy_gbps=copy_gbps,
        reference=_torch_softmax(shape, dtype),
    )
    print(
        f"\n{name} {shape} {dtype}: {rec.median_us:.1f} us, {rec.frac_of_copy:.0%} of copy, "
        f"{rec.vs_ref:.2f}x F.softmax"
    )
    assert rec.gbps > 0


@pytest.mark.parametrize("n", [1 << 24])
def test_vector_add(benchmark, n, copy_gbps):
    rec = bench.bench(benchmark, registry.get("cuda.vector_add"), (n,), "float32", copy_gbps=copy_gbps)
    assert rec.gbps > 0
