"""Benchmark: forward + backward of the mean cross-entropy over stored logits, ours beside
F.cross_entropy, torch.compile(F.cross_entropy), Liger and QuACK (each skipped, with the
reason, when it is not installed or fails at a shape).

For every (M, V, dtype): device time (labtools' harness: CUDA events, L2 flushed, median),
the fraction of the floor (the logits read once and the gradient written once at the
device-copy bandwidth measured at the same shape in the same run: a copy of the logits is
exactly that traffic, so the fraction is copy time / our time), and the memory the step
holds beyond the gradient (peak allocated during the step, minus what was allocated before,
minus the gradient's bytes; F.cross_entropy keeps a full copy of the log-probabilities).

    uv run pytest tests/kernels_triton/bench_cross_entropy.py --benchmark-only --benchmark-json=out/ce.json
    uv run python tests/kernels_triton/bench_cross_entropy.py          # the table, on stdout

Liger writes the gradient over its input, and "Triton in place" (inplace_backward=True) too:
both then run on the previous call's gradients, which costs the same.
"""

from __future__ import annotations

import functools
import importlib
import sys

import pytest
import torch
import torch.nn.functional as F
from labtools import registry
from labtools.bench import bench, measure
from labtools.registry import Implementation

CASES = [
    (8192, 128256, "bfloat16"),  # Llama 3's vocabulary
    (16384, 32000, "bfloat16"),
    (4096, 50257, "bfloat16"),  # GPT-2's
    (4096, 50257, "float32"),
    (4096, 256000, "bfloat16"),
    (65536, 600, "float32"),  # MiniGPT's
]
IDS = [f"{m}x{v}-{d}" for m, v, d in CASES]


@functools.cache
def _targets(m: int, v: int, device: str) -> torch.Tensor:
    g = torch.Generator(device=device).manual_seed(m * 7 + v)
    return torch.randint(0, v, (m,), generator=g, device=device)


def _compiled_loss():
    return torch.compile(lambda x, t: F.cross_entropy(x, t), dynamic=False)


def _loss_functions() -> dict:
    """label -> (loss(x, t) or None, why it is missing)."""
    import kernels_triton

    out = {
        "Triton": (kernels_triton.cross_entropy, ""),
        "Triton in place": (functools.partial(kernels_triton.cross_entropy, inplace_backward=True), ""),
        "F.cross_entropy": (F.cross_entropy, ""),
        "torch.compile": (None, ""),  # one compiled function per shape: _step
    }
    for label, module, attr in (
        ("Liger", "liger_kernel.transformers.functional", "liger_cross_entropy"),
        ("QuACK", "quack.cross_entropy", "cross_entropy"),
    ):
        try:
            out[label] = (getattr(importlib.import_module(module), attr), "")
        except Exception as exc:  # noqa: BLE001 - any import failure: reported, skipped
            out[label] = (None, f"not importable ({type(exc).__name__}: {exc})")
    return out


LABELS = ["Triton", "Triton in place", "F.cross_entropy", "torch.compile", "Liger", "QuACK"]
_compiled: dict = {}


def _step(label: str, m: int, v: int, dtype: str):
    """fn(x) -> the gradient of the mean loss at x, by `label`; raises pytest.skip when missing."""
    loss_fn, why = _loss_functions()[label]
    if label == "torch.compile":
        loss_fn = _compiled.setdefault((m, v, dtype), _compiled_loss())
    if loss_fn is None:
        pytest.skip(f"{label}: {why}")

    def fn(x):
        leaf = x.detach().requires_grad_()
        return torch.autograd.grad(loss_fn(leaf, _targets(*x.shape, str(x.device))), leaf)[0]

    return fn


def _peak_extra_bytes(fn, m: int, v: int, dtype: str) -> int:
    """Peak memory of one step beyond its input and the gradient it returns."""
    x = torch.randn(m, v, device="cuda", dtype=getattr(torch, dtype))
    fn(x)  # warm: compile, plans, targets, allocator
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    grad = fn(x)
    torch.cuda.synchronize()
    own = 0 if grad.data_ptr() == x.data_ptr() else grad.numel() * grad.element_size()  # 0: in place
    return torch.cuda.max_memory_allocated() - base - own


@functools.cache
def _copy(shape, dtype):
    return measure(registry.get("torch.copy.cuda"), shape, dtype)


def _measure(label: str, m: int, v: int, dtype: str, benchmark=None) -> dict:
    fn = _step(label, m, v, dtype)
    impl = Implementation(
        fn, "cross_entropy", f"bench.{label}", "bench", label, device="cuda", dtypes=(dtype,)
    )
    copy = _copy((m, v), dtype)
    try:
        if benchmark is None:
            rec = measure(impl, (m, v), dtype, copy_gbps=copy.gbps)
        else:
            rec = bench(benchmark, impl, (m, v), dtype, copy_gbps=copy.gbps)
        extra = _peak_extra_bytes(fn, m, v, dtype)
    except pytest.skip.Exception:
        raise
    except Exception as exc:  # noqa: BLE001 - a peer failing at a shape (QuACK at V % 8 != 0)
        pytest.skip(f"{label} fails at {m}x{v} {dtype}: {type(exc).__name__}: {str(exc)[:200]}")
    return {
        "impl": label,
        "shape": [m, v],
        "dtype": dtype,
        "device_us": rec.median_us,
        "copy_us": copy.median_us,
        "floor_fraction": rec.frac_of_copy,
        "copy_gbps": copy.gbps,
        "extra_bytes_beyond_gradient": extra,
    }


@pytest.mark.gpu
@pytest.mark.parametrize("label", LABELS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_cross_entropy_forward_backward(benchmark, case, label):
    row = _measure(label, *case, benchmark=benchmark)
    benchmark.extra_info.update(row)
    assert row["device_us"] > 0 and row["floor_fraction"] > 0


def main() -> int:
    if not torch.cuda.is_available():
        print("needs a CUDA device", file=sys.stderr)
        return 1
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{'shape':>22} {'impl':>16} {'device us':>10} {'floor us':>9} {'of floor':>8} {'extra MB':>9}")
    for m, v, dtype in CASES:
        for label in LABELS:
            try:
                r = _measure(label, m, v, dtype)
            except pytest.skip.Exception as why:
                print(f"{f'{m}x{v} {dtype}':>22} {label:>16}  skipped: {why}")
                continue
            print(
                f"{f'{m}x{v} {dtype}':>22} {label:>16} {r['device_us']:>10.1f} {r['copy_us']:>9.1f} "
                f"{r['floor_fraction']:>8.1%} {r['extra_bytes_beyond_gradient'] / 2**20:>9.1f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
