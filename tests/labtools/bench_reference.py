"""Benchmarks of the reference implementations, through the one harness.

The CPU one runs anywhere; the GPU ones need a CUDA device."""

import pytest
from labtools import bench, registry


def test_numpy_softmax_cpu(benchmark):
    rec = bench.bench(benchmark, registry.get("numpy.softmax"), (512, 600), "float32", time_cap_s=1.0)
    assert rec.median_us > 0


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_torch_softmax_cuda(benchmark, dtype):
    rec = bench.bench(benchmark, registry.get("torch.softmax.cuda"), (16384, 4096), dtype)
    assert rec.gbps > 0


@pytest.mark.gpu
def test_copy_cuda(benchmark):
    rec = bench.bench(benchmark, registry.get("torch.copy.cuda"), (16384, 4096), "float32")
    assert rec.gbps > 0
