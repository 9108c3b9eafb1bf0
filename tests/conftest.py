"""Test-session setup shared by every package's tests.

- With no CUDA device, TRITON_INTERPRET=1 is set here, before anything imports triton,
  so Triton kernels run under Triton's CPU interpreter.
- Tests marked `gpu` skip, with the reason, when there is no CUDA device.
- OPENBLAS_NUM_THREADS=1 and OMP_WAIT_POLICY=PASSIVE unless already set (see below).
- Hypothesis profiles: `ci` (default: few examples, no deadline) and `gpu` (large
  sweeps), chosen with HYPOTHESIS_PROFILE=gpu.
- Benchmarks (files bench_*.py, using the `benchmark` fixture) are skipped by the
  `--benchmark-skip` in pyproject's addopts; `pytest --benchmark-only` runs only them,
  the other tests deselected (one "N deselected" in the summary) rather than skipped (one
  "SKIPPED" line each under -ra, which buried the benchmark table).
"""

from __future__ import annotations

import os

# Thread pools sized for a shared 2-core CI machine, set before numpy or torch load:
# a second OpenBLAS thread made the NumPy model's tests 5x slower when the other core was
# busy, and after an Inductor-compiled C++ kernel has run, spinning OpenMP workers made
# plain eager calls in the same process go from ~90 us to ~40 ms.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _cuda_device_present() -> bool:
    try:
        import torch  # does not import triton

        return torch.cuda.is_available()
    except ImportError:
        pass
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no cupy, no driver: no device
        return False


HAS_CUDA = _cuda_device_present()
if not HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "ci", max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile(
    "gpu", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_report_header(config):
    interp = os.environ.get("TRITON_INTERPRET") == "1"
    return [
        f"kernel-lab: CUDA device: {'yes' if HAS_CUDA else 'no'}; "
        f"Triton interpreter: {'on' if interp else 'off'}; "
        f"hypothesis profile: {settings._current_profile}"
    ]


def pytest_collection_modifyitems(config, items):
    if config.getoption("benchmark_only", default=False):
        others = [item for item in items if "benchmark" not in getattr(item, "fixturenames", ())]
        if others:
            config.hook.pytest_deselected(items=others)
            items[:] = [item for item in items if "benchmark" in getattr(item, "fixturenames", ())]
    if HAS_CUDA:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (none found: torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
