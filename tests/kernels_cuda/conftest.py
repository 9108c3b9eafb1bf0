"""Fixtures of the kernels_cuda tests."""

import os
from typing import NamedTuple

import pytest


@pytest.fixture(scope="session")
def offline_cache(tmp_path_factory):
    """One disk cache, empty at the start of the run, for every test that compiles kernels
    offline: a specialization two files compile (every one for sm_90 in test_cuda_codegen, the
    backward's, cross-entropy's and log_softmax's again in their own files) goes through NVRTC
    once, and a cached entry carries the same resource report and PTX as a fresh compile.
    Under pytest-xdist the run's workers share it (their temporary folders' parent is the
    run's own): the cache's atomic writes and verified reads make concurrent fills safe."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.getbasetemp().parent / "kernels-cuda-offline-cache"
        folder.mkdir(exist_ok=True)
        return folder
    return tmp_path_factory.mktemp("kernels-cuda-offline-cache")


class Launch(NamedTuple):
    kernel: str
    pointers: tuple
    spec: object
    grid: int
    block: int


@pytest.fixture
def recorded(monkeypatch):
    """CPU tensors pass as CUDA ones on an sm_90 device of 132 SMs; every launch of the
    cross-entropy family is recorded in the returned list (Launch: kernel, pointers, spec, grid,
    block) instead of run, the packed launches made afresh for the test."""
    from kernels_cuda import arrays, codegen
    from kernels_cuda import log_softmax_op as ls
    from kernels_cuda import row_kernels as rk
    from kernels_cuda import xent_launch as xl

    log = []

    def packed(spec, device_id, grid, block, *rest):
        return lambda stream, *pointers: log.append(Launch(spec.kernel, pointers, spec, grid, block))

    monkeypatch.setattr(codegen, "packed", packed)
    monkeypatch.setattr(codegen, "device_arch", lambda device_id: "sm_90")
    monkeypatch.setattr(rk, "_launches", {})
    monkeypatch.setattr(xl, "_runs", {})
    monkeypatch.setattr(arrays, "_raw_stream", lambda device: 0)
    monkeypatch.setattr(rk, "sms", lambda device: 132)
    monkeypatch.setattr(rk, "max_shared", lambda device: 227 * 1024)
    monkeypatch.setattr(ls, "check_tensor", lambda x, fn, what="x": ls.dtype_name(x, fn, what))
    return log


@pytest.fixture
def no_device_refused(monkeypatch):
    """No device refused yet; every cache dropped before and after, so that no plan made here for
    a refusing device (or a stand-in launch) outlives the test."""
    from kernels_cuda import device_props
    from kernels_cuda import softmax_variants as variants

    monkeypatch.setattr(device_props, "REFUSED_CLUSTER16", set())
    variants.clear_caches()
    yield
    monkeypatch.undo()
    variants.clear_caches()
