"""Fixtures of the kernels_cuda tests."""

import pytest


@pytest.fixture(scope="session")
def offline_cache(tmp_path_factory):
    """One disk cache, empty at the start of the session, for every test that compiles kernels
    offline: a specialization two files compile (every one for sm_90 in test_cuda_codegen, the
    backward's, cross-entropy's and log_softmax's again in their own files) goes through NVRTC
    once, and a cached entry carries the same resource report and PTX as a fresh compile."""
    return tmp_path_factory.mktemp("kernels-cuda-offline-cache")
