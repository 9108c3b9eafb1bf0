"""The reference implementations every kernel is timed against: NumPy, torch eager and
torch.compile. Registered by `labtools.registry.load_plugins`; torch is imported only
when one of them runs."""

from __future__ import annotations

import importlib.util

from labtools.ops import softmax_backward_ref, softmax_ref
from labtools.registry import Implementation
from labtools.registry import register as _register_impl

HALF = ("float32", "float16", "bfloat16")


def _torch_softmax(x):
    import torch

    return torch.softmax(x, dim=-1)


def _torch_softmax_backward(y, dy):
    import torch

    return torch._softmax_backward_data(dy, y, -1, y.dtype)


def _torch_copy(x):
    import torch

    return torch.empty_like(x).copy_(x)


def _torch_add(a, b):
    return a + b


_compiled: dict = {}
COMPILE_KW: dict = {"dynamic": False}  # tests swap in backend="eager" to stay fast


def _compiled_softmax(x):
    """torch.compile(softmax) specialised per shape and dtype (dynamic=False), each with
    its own compiled function so a long sweep never runs into the recompile limit."""
    import torch

    key = (tuple(x.shape), x.dtype, x.device.type)
    fn = _compiled.get(key)
    if fn is None:
        # Dynamo counts recompiles per code object, and every entry here shares the lambda's:
        # past the limit (8 by default) it would silently fall back to eager F.softmax.
        cfg = torch._dynamo.config
        name = "recompile_limit" if hasattr(cfg, "recompile_limit") else "cache_size_limit"
        setattr(cfg, name, max(getattr(cfg, name), 4 * (len(_compiled) + 1)))
        fn = _compiled[key] = torch.compile(lambda t: torch.softmax(t, dim=-1), **COMPILE_KW)
    return fn(x)


def register() -> None:
    _add(
        Implementation(
            softmax_ref,
            "softmax",
            "numpy.softmax",
            "numpy",
            "NumPy (f64)",
            device="cpu",
            dtypes=("float64", "float32", "float16"),
            is_reference=False,
        )
    )
    _add(
        Implementation(
            softmax_backward_ref,
            "softmax_backward",
            "numpy.softmax_backward",
            "numpy",
            "NumPy (f64)",
            device="cpu",
            dtypes=("float64", "float32", "float16"),
        )
    )
    if importlib.util.find_spec("torch") is None:
        return
    for device in ("cuda", "cpu"):
        _add(
            Implementation(
                _torch_softmax,
                "softmax",
                f"torch.softmax.{device}",
                "torch",
                "F.softmax",
                device=device,
                dtypes=HALF + ("float64",),
                is_reference=True,
            )
        )
        _add(
            Implementation(
                _torch_softmax_backward,
                "softmax_backward",
                f"torch.softmax_backward.{device}",
                "torch",
                "F.softmax bwd",
                device=device,
                dtypes=HALF + ("float64",),
                is_reference=True,
            )
        )
    _add(
        Implementation(
            _compiled_softmax,
            "softmax",
            "torch.compile.softmax.cuda",
            "torch.compile",
            "torch.compile",
            device="cuda",
            dtypes=HALF,
        )
    )
    _add(
        Implementation(
            _torch_copy,
            "copy",
            "torch.copy.cuda",
            "torch",
            "copy",
            device="cuda",
            dtypes=HALF,
            is_reference=True,
        )
    )
    _add(
        Implementation(
            _torch_add,
            "vector_add",
            "torch.add.cuda",
            "torch",
            "a + b",
            device="cuda",
            dtypes=HALF,
            is_reference=True,
        )
    )


def _add(impl: Implementation) -> None:
    _register_impl(impl, replace=True)  # idempotent: load_plugins(force=True) re-runs this
