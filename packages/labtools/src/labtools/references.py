"""The reference implementations every kernel is timed against: NumPy, torch eager and
torch.compile. Registered by `labtools.registry.load_plugins`; torch is imported only
when one of them runs."""

from __future__ import annotations

import importlib.util
import types

from labtools.ops import cross_entropy_grad_ref, log_softmax_ref, softmax_backward_ref, softmax_ref
from labtools.registry import Implementation
from labtools.registry import register as _register_impl

HALF = ("float32", "float16", "bfloat16")


def _torch_softmax(x):
    import torch

    return torch.softmax(x, dim=-1)


def _torch_softmax_backward(y, dy):
    import torch

    return torch._softmax_backward_data(dy, y, -1, y.dtype)


def _torch_log_softmax(x):
    import torch

    return torch.log_softmax(x, dim=-1)


_TARGETS: dict = {}


def class_zero_targets(x):
    """The cross_entropy op's targets for logits x: class 0 for every row, made once per
    (rows, device) so that no implementation's time includes making them."""
    import torch

    key = (x.shape[0], x.device)
    if key not in _TARGETS:
        _TARGETS[key] = torch.zeros(x.shape[0], dtype=torch.long, device=x.device)
    return _TARGETS[key]


def _sum_cross_entropy(x, target):
    import torch

    return torch.nn.functional.cross_entropy(x, target, reduction="sum")


def _torch_cross_entropy(x):
    """F.cross_entropy forward and backward: the gradient of the summed loss."""
    import torch

    leaf = x.detach().requires_grad_()
    return torch.autograd.grad(_sum_cross_entropy(leaf, class_zero_targets(x)), leaf)[0]


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


def _compiled_log_softmax(x):
    return _compiled_call("log_softmax", _torch_log_softmax, x)


def _compiled_cross_entropy(x):
    """The loss compiled (AOT autograd compiles its backward with it); gradient as above."""
    import torch

    leaf = x.detach().requires_grad_()
    loss = _compiled_call("cross_entropy", _sum_cross_entropy, leaf, class_zero_targets(x))
    return torch.autograd.grad(loss, leaf)[0]


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
    impls += [
        Implementation(log_softmax_ref, "log_softmax", "numpy.log_softmax", "numpy", "NumPy (f64)", "cpu", NUMPY_DTYPES),
        Implementation(
            cross_entropy_grad_ref, "cross_entropy", "numpy.cross_entropy", "numpy", "NumPy (f64)", "cpu",
            NUMPY_DTYPES,
        ),
    ]  # fmt: skip
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
            Implementation(
                _torch_log_softmax, "log_softmax", f"torch.log_softmax.{device}", "torch", "F.log_softmax", device,
                TORCH_DTYPES, is_reference=True,
            ),
            Implementation(
                _torch_cross_entropy, "cross_entropy", f"torch.cross_entropy.{device}", "torch", "F.cross_entropy",
                device, TORCH_DTYPES, is_reference=True,
            ),
        ]  # fmt: skip
    return impls + [
        Implementation(
            _compiled_log_softmax, "log_softmax", "torch.compile.log_softmax.cuda", "torch.compile",
            "torch.compile", "cuda", HALF,
        ),
        Implementation(
            _compiled_cross_entropy, "cross_entropy", "torch.compile.cross_entropy.cuda", "torch.compile",
            "torch.compile", "cuda", HALF,
        ),
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
