"""What the refused-cluster tests (test_cuda_cluster_refused*.py) share: a refusal's text, the
H200 as its picks see it, and a launch that raises (the fixture no_device_refused: conftest.py)."""

from __future__ import annotations

from dataclasses import replace

from kernels_cuda.launch_types import H100

REFUSAL = "CUDA error: a kernel launch error has occurred due to cluster misconfiguration"
H200 = replace(H100, name="NVIDIA H200")  # its committed picks name 16-block clusters (cuda_picks.json)


def raising(error):
    def run(*args):
        raise error

    return run
