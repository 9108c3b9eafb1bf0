"""Fixtures for labtools' tests: a registry of fake CPU implementations and checks (so
sweeps and `lab run` are tested without a GPU or any kernel package), and a synthetic
GPU-like sweep for the plots."""

from __future__ import annotations

import numpy as np
import pytest
from labtools import bench, registry
from labtools.ceilings import DATASHEETS, Ceilings
from labtools.ops import softmax_backward_ref, softmax_ref
from labtools.registry import Check, Implementation
from labtools.sweep import Sweep

F16 = ("float32", "float16")


def _softmax(x):
    return softmax_ref(x).astype(x.dtype)


def _softmax_last_row_unwritten(x):
    y = softmax_ref(x).astype(x.dtype)
    y[-1] = np.nan  # a kernel that never writes its last row
    return y


def _crash(x):
    raise RuntimeError("launch failed: too many resources requested")


def _picks():
    return [
        {"key": {"N": 4096, "dtype": "float32"}, "config": {"BLOCK": 4096, "num_warps": 8, "num_stages": 1}},
        {
            "key": {"N": 600, "dtype": "torch.float32"},
            "config": {"BLOCK": 1024, "num_warps": 4, "num_stages": 1},
        },
    ]


def fake_implementations() -> list[Implementation]:
    return [
        Implementation(
            lambda x: x + 0, "softmax", "fake.identity", "numpy", "wrong", device="cpu", dtypes=F16
        ),
        Implementation(
            _softmax, "softmax", "fake.ref", "numpy", "F.ref", device="cpu", dtypes=F16, is_reference=True
        ),
        Implementation(
            _softmax,
            "softmax",
            "fake.tuned",
            "numpy",
            "tuned",
            device="cpu",
            dtypes=F16,
            meta={"autotune_picks": _picks},
        ),
        Implementation(
            _softmax,
            "softmax",
            "fake.short_rows",
            "numpy",
            "short",
            device="cpu",
            dtypes=("float32",),
            supports=lambda shape, dtype: shape[-1] <= 1024,
        ),
        Implementation(
            _softmax_last_row_unwritten,
            "softmax",
            "fake.tail_bug",
            "numpy",
            "tail-bug",
            device="cpu",
            dtypes=F16,
        ),
        Implementation(_crash, "softmax", "fake.crash", "numpy", "crash", device="cpu", dtypes=F16),
        Implementation(_softmax, "softmax", "fake.gpu_only", "numpy", "gpu", device="cuda", dtypes=F16),
        Implementation(
            lambda y, dy: softmax_backward_ref(y, dy).astype(y.dtype),
            "softmax_backward",
            "fake.bwd_ref",
            "numpy",
            "F.ref bwd",
            device="cpu",
            dtypes=F16,
            is_reference=True,
        ),
    ]


def fake_checks() -> list[Check]:
    port = {
        "passed": True,
        "byte_equivalence_at_fp32_cpu": True,
        "max_abs_diff_to_numpy_reference": np.float32(3e-7),
        "fp64_max_abs_diff": 1e-15,
    }
    return [
        Check("minigpt_torch.port", lambda: dict(port)),
        Check(
            "minigpt_torch.kernel_swap",
            lambda: {"passed": True, "kernel_swap_changes_top1_token": False},
            needs_cuda=True,
        ),
    ]


@pytest.fixture
def fake_registry(monkeypatch):
    """Only the fake implementations and checks are registered for the test's duration."""
    monkeypatch.setattr(registry, "_plugins_loaded", True)
    monkeypatch.setattr(registry, "_REGISTRY", {i.name: i for i in fake_implementations()})
    monkeypatch.setattr(registry, "_CHECKS", {c.name: c for c in fake_checks()})
    return registry


H100 = Ceilings("NVIDIA H100 80GB HBM3", 2950.0, {"fp32": 51.0}, DATASHEETS["H100 SXM"])
# fraction of the copy ceiling each synthetic implementation reaches (invented, for layout tests only)
SYNTHETIC = {
    "F.softmax": 0.79,
    "naive": 0.12,
    "smem": 0.45,
    "fused": 0.70,
    "long-row": 0.66,
    "Triton": 0.74,
    "torch.compile": 0.77,
}


def _synthetic_sweep(
    shapes=((4096, 600), (65536, 600), (16384, 4096), (1024, 131072)), dtypes=("float32", "bfloat16")
) -> Sweep:
    records = []
    for shape in shapes:
        for dtype in dtypes:
            ref = None
            for k, (label, frac) in enumerate(SYNTHETIC.items()):
                impl = Implementation(
                    abs, "softmax", f"synthetic.{label}", "torch", label, is_reference=k == 0
                )
                frac = frac * (0.6 if dtype == "bfloat16" else 1.0) * (1.0 if shape[0] > 4096 else 0.8)
                t_us = impl.cost(shape, bench.itemsize(dtype))[0] / (frac * H100.copy_gbps * 1e3)
                rec = bench.record(
                    impl,
                    shape,
                    dtype,
                    bench.Timing((t_us * 0.99, t_us, t_us * 1.01), "cuda"),
                    copy_gbps=H100.copy_gbps,
                    reference=ref,
                )
                if ref is None:
                    ref = rec.with_reference(rec)
                records.append(rec)
    env = {
        "python": "3.12.0",
        "versions": {},
        "devices": [{"name": H100.device, "compute_capability": "9.0"}],
    }
    return Sweep("softmax", "cuda", records, [], [], H100, env, {}, "synthetic (tests)")


@pytest.fixture
def synthetic_sweep():
    """Builds a GPU-like sweep from invented timings: F.softmax the reference, seven labels
    (synthetic_sweep(shapes=..., dtypes=...))."""
    return _synthetic_sweep
