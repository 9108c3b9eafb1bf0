"""Benchmarks of the Triton softmax, forward and backward, through labtools' harness.

GPU only. Each benchmark stores device times in pytest-benchmark and, in extra_info,
GB/s, the fraction of the copy bandwidth measured at the same shape and dtype
(frac_of_copy), and the speed relative to F.softmax or its backward (vs_ref: > 1 is
faster). torch.compile's softmax is benchmarked at the same shapes alongside.

    scripts/test-in-place tests/kernels_triton/bench_softmax.py --benchmark-only --benchmark-json=out/triton.json
"""

import functools

import pytest
from labtools import registry
from labtools.bench import bench, measure

SHAPES = [(4096, 600), (65536, 600), (16384, 4096), (4096, 32768), (256, 262144)]
DTYPES = ["float32", "bfloat16"]

shapes = pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{n}" for m, n in SHAPES])
dtypes = pytest.mark.parametrize("dtype", DTYPES)


@functools.cache
def _measured(name: str, shape: tuple[int, int], dtype: str):
    return measure(registry.get(name), shape, dtype)


def _bench_against(benchmark, name, ref_name, shape, dtype):
    copy = _measured("torch.copy.cuda", shape, dtype)
    ref = _measured(ref_name, shape, dtype)
    rec = bench(benchmark, registry.get(name), shape, dtype, copy_gbps=copy.gbps, reference=ref)
    assert rec.gbps > 0 and rec.frac_of_copy > 0 and rec.vs_ref > 0
    return rec


@pytest.mark.gpu
@dtypes
@shapes
def test_triton_softmax_forward(benchmark, shape, dtype):
    _bench_against(benchmark, "triton.softmax", "torch.softmax.cuda", shape, dtype)


@pytest.mark.gpu
@dtypes
@shapes
def test_triton_softmax_backward(benchmark, shape, dtype):
    _bench_against(benchmark, "triton.softmax_backward", "torch.softmax_backward.cuda", shape, dtype)


@pytest.mark.gpu
@dtypes
@shapes
def test_torch_compile_softmax_forward(benchmark, shape, dtype):
    _bench_against(benchmark, "torch.compile.softmax.cuda", "torch.softmax.cuda", shape, dtype)
