"""The reference implementations every kernel is timed against: NumPy, torch eager and
torch.compile. Registered by `labtools.registry.load_plugins`; torch is imported only
when one of them runs."""

from __future__ import annotations

import importlib.util
import types

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


def _compiled_call(op: str, fn, *tensors):
    """torch.compile(fn)(*tensors), compiled once per op, shape and dtype (dynamic=False).

    Each key compiles a copy of fn with a code object of its own. Dynamo keeps compiled entries,
    and counts recompiles, per code object: with one shared by every shape of a sweep, it would
    fall back to eager past its recompile limit (8 by default), and every call would test the
    guards of the shapes before it. The copies leave Dynamo's global configuration alone."""
    import torch

    x = tensors[0]
    key = (op, tuple(x.shape), x.dtype, x.device.type)
    compiled = _compiled.get(key)
    if compiled is None:
        own = types.FunctionType(
            fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__
        )
        own.__kwdefaults__ = fn.__kwdefaults__
        compiled = _compiled[key] = torch.compile(own, **COMPILE_KW)
    return compiled(*tensors)


def _compiled_softmax(x):
    return _compiled_call("softmax", _torch_softmax, x)


def _compiled_softmax_backward(y, dy):
    """dx from y and dy as Inductor fuses it (one kernel, like ours)."""
    return _compiled_call("softmax_backward", _torch_softmax_backward, y, dy)


NUMPY_DTYPES = ("float64", "float32", "float16")
TORCH_DTYPES = HALF + ("float64",)


def implementations() -> list[Implementation]:
    """The references: NumPy always; torch eager on both devices, and the CUDA-only
    torch.compile, copy and add, when torch is installed."""
    impls = [
        Implementation(softmax_ref, "softmax", "numpy.softmax", "numpy", "NumPy (f64)", "cpu", NUMPY_DTYPES),
        Implementation(
            softmax_backward_ref,
            "softmax_backward",
            "numpy.softmax_backward",
            "numpy",
            "NumPy (f64)",
            "cpu",
            NUMPY_DTYPES,
        ),
    ]
    if importlib.util.find_spec("torch") is None:
        return impls
    for device in ("cuda", "cpu"):
        impls += [
            Implementation(
                _torch_softmax, "softmax", f"torch.softmax.{device}", "torch", "F.softmax", device,
                TORCH_DTYPES, is_reference=True,
            ),
            Implementation(
                _torch_softmax_backward, "softmax_backward", f"torch.softmax_backward.{device}", "torch",
                "F.softmax bwd", device, TORCH_DTYPES, is_reference=True,
            ),
        ]  # fmt: skip
    return impls + [
        Implementation(
            _compiled_softmax, "softmax", "torch.compile.softmax.cuda", "torch.compile", "torch.compile",
            "cuda", HALF,
        ),
        Implementation(
            _compiled_softmax_backward, "softmax_backward", "torch.compile.softmax_backward.cuda",
            "torch.compile", "torch.compile bwd", "cuda", HALF,
        ),
        Implementation(_torch_copy, "copy", "torch.copy.cuda", "torch", "copy", "cuda", HALF, is_reference=True),
        Implementation(_torch_add, "vector_add", "torch.add.cuda", "torch", "a + b", "cuda", HALF, is_reference=True),
    ]  # fmt: skip


def register() -> None:
    """Register every reference (idempotent: `load_plugins(force=True)` runs it again)."""
    for impl in implementations():
        _register_impl(impl, replace=True)
