"""softmax(x, dim) in Triton, forward and backward: the public op.

Inputs are viewed as (M, N) rows, N the softmax dim (a copy only where that dim is not the innermost,
contiguous one), for a launch template (launch.py). Under torch.compile or export, _Softmax calls two opaque
custom ops with shape-only fakes; eager calls skip their dispatch (as much host time as the launch), and
contiguous rows find their template in a dict keyed on what the first call checked (not M)."""

from __future__ import annotations

import math
from collections import OrderedDict

import torch

from kernels_triton import configs, launch
from kernels_triton.configs import DTYPES, INTERPRET, SoftmaxConfig, dtype_name

ACCEPTED = (*DTYPES, torch.float64)
ACCEPTED_NAMES = ", ".join(map(dtype_name, ACCEPTED))

# The fast paths' test for tracing (one call; other tracers' tensor subclasses fail `type(x) is Tensor`)
_is_dynamo_compiling = torch.compiler.is_dynamo_compiling


class SoftmaxDimError(IndexError, ValueError):
    """A dim out of range: an IndexError as in torch, and a ValueError as a bad argument."""


def check(x, dim, what: str, op: str = "Triton softmax") -> int:  # log_softmax's too
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in ACCEPTED:
        raise TypeError(f"{what} has dtype {x.dtype}; {op} takes {ACCEPTED_NAMES}")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    ndim = max(x.dim(), 1)  # a 0-d tensor is softmaxed as one element, dim 0 or -1, like torch
    if not -ndim <= dim < ndim:
        raise SoftmaxDimError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                              f"but got {dim})")  # fmt: skip
    if not x.is_cuda and not INTERPRET:
        raise ValueError(f"{what} is on {x.device}, and Triton kernels run on CUDA devices. To run them on the CPU "
                         "under Triton's interpreter, set TRITON_INTERPRET=1 before triton is imported.")  # fmt: skip
    return dim % ndim


def as_rows(t: torch.Tensor, dim: int) -> torch.Tensor:
    """t with `dim` moved last, as a 2D (M, N) view (a copy where it must be) with unit column stride."""
    if dim == t.dim() - 1 and t.numel() and t.is_contiguous():  # the usual call: one view
        return t.view(-1, t.shape[-1])
    t = t.reshape(1) if t.dim() == 0 else t.movedim(dim, -1)
    rows = t.reshape(math.prod(t.shape[:-1]), t.shape[-1])
    return rows if rows.stride(-1) == 1 else rows.contiguous()


def from_rows(rows: torch.Tensor, like: torch.Tensor, dim: int) -> torch.Tensor:
    """Inverse of as_rows: (M, N) back to `like`'s shape with the softmax dim in place."""
    last = dim >= like.dim() - 1  # (a 0-d tensor's dim is 0)
    return rows.view(like.shape) if last else rows.reshape(like.movedim(dim, -1).shape).movedim(-1, dim)


_FORWARD: dict[tuple, launch.Template] = OrderedDict()  # bounded: launch.remember
_BACKWARD: dict[tuple, launch.Template] = OrderedDict()
_IN_PLACE: dict[tuple, launch.Template] = OrderedDict()  # softmax_, keyed as _FORWARD
launch.PLAN_CACHES.extend((_FORWARD, _BACKWARD, _IN_PLACE))  # emptied by launch.forget_plans()


def _apply(name: str, inputs: list, dim: int, config, cache: dict, out=None, run: bool = True):
    """Kernel `name` on checked `inputs` along dim into `out` (None: a new tensor), returned; rows
    contiguous along the last dim keep their template in `cache`. run=False: no launch (the fakes)."""
    x = inputs[0]
    if dim == x.dim() - 1 and all(t.is_contiguous() for t in inputs):
        out = torch.empty_like(x) if out is None else out
        if out.numel() and run:
            n = x.shape[-1]
            rows = [t.view(-1, n) for t in (*inputs, out)]
            template = launch.launch(name, rows, out.numel() // n, n, config)
            ids = [v for t in inputs for v in (t.dtype, t.get_device(), t.data_ptr() % 16)]
            for d in (dim, dim - x.dim()):  # softmax(x, -1) and softmax(x, x.dim() - 1) alike
                launch.remember(cache, (x.dim(), n, d, config, *ids), template)
        return out
    rows = [as_rows(t, dim) for t in inputs]
    out_rows = torch.empty(rows[0].shape, dtype=x.dtype, device=x.device)
    if out_rows.numel() and run:
        launch.launch(name, [*rows, out_rows], *out_rows.shape, config)
    result = from_rows(out_rows, x, dim)
    return result if out is None else out.copy_(result)


def _forward(x, dim: int, config=None, run: bool = True) -> torch.Tensor:
    return _apply("softmax_fwd", [x], dim, config, _FORWARD, run=run)


def _backward(y, dy, dim: int, config=None, run: bool = True) -> torch.Tensor:
    return _apply("softmax_bwd", [y, dy.to(y.dtype)], dim, config, _BACKWARD, run=run)


@torch.library.custom_op("kernels_triton::softmax", mutates_args=())
def _softmax_op(x: torch.Tensor, dim: int) -> torch.Tensor:
    return _forward(x, dim)


@torch.library.custom_op("kernels_triton::softmax_backward", mutates_args=())
def _softmax_backward_op(y: torch.Tensor, dy: torch.Tensor, dim: int) -> torch.Tensor:
    return _backward(y, dy, dim)


_softmax_op.register_fake(lambda x, dim: _forward(x, dim, run=False))
_softmax_backward_op.register_fake(lambda y, dy, dim: _backward(y, dy, dim, run=False))


def _compiling(config) -> bool:
    """Whether torch.compile or torch.export traces this call (config= refused there)."""
    compiling = torch.compiler.is_compiling()
    if compiling and config is not None:
        raise ValueError("config= applies to eager calls; under torch.compile/export the picks decide")
    return compiling


class _Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, config, plan):
        if plan is not None:  # the template softmax() found for this x
            y = torch.empty_like(x)
            plan(x, y)
        elif torch.compiler.is_compiling():
            y = _softmax_op(x, dim)
        else:
            y = _forward(x, dim, config)
        ctx.save_for_backward(y)
        ctx.dim, ctx.config = dim, config
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        if torch.compiler.is_compiling():
            return _softmax_backward_op(y, dy, ctx.dim), None, None, None
        return softmax_backward(y, dy, ctx.dim, config=ctx.config), None, None, None


def softmax(x: torch.Tensor, dim: int = -1, *, config: SoftmaxConfig | None = None) -> torch.Tensor:
    """softmax(x, dim) with Triton kernels forward and backward (autograd works).

    x: fp32, fp16, bf16 or fp64, any shape and layout, on a CUDA device (or the CPU under TRITON_INTERPRET=1); the
    result has x's dtype and shape, NaN in rows of all -inf (as torch). `config` forces one launch configuration
    (both directions, eager calls) instead of the picks or the rule. Under torch.compile or torch.export it is one
    opaque op, kernels_triton::softmax, with its backward. Batch invariant: a row's result, forward and backward,
    is the same bits whatever the rest of the batch, for a row at the same 16-byte alignment (see the README)."""
    if type(x) is torch.Tensor and type(dim) is int and not _is_dynamo_compiling() and (s := x.shape):
        # _apply's key, written out: a call costs as much as the dict lookup
        template = _FORWARD.get((len(s), s[-1], dim, config, x.dtype, x.get_device(), x.data_ptr() % 16))
        if template is not None and x.is_contiguous():  # this key passed the checks below before
            if x.requires_grad and torch.is_grad_enabled():
                return _Softmax.apply(x, dim, config, template)
            y = torch.empty_like(x)
            template(x, y)
            return y
    dim = check(x, dim, "x")
    if _compiling(config) or (x.requires_grad and torch.is_grad_enabled()):
        return _Softmax.apply(x, dim, config, None)
    return _forward(x, dim, config)


def softmax_(x: torch.Tensor, dim: int = -1, *, config: SoftmaxConfig | None = None) -> torch.Tensor:
    """softmax in place: x <- softmax(x, dim); returns x. For a tensor nobody reads again (an LM head's logits
    while sampling): no output to allocate, a good part of a short call's host time. Not differentiable (x
    must not require grad); the same bits as softmax. Other layouts are computed out of place, copied back."""
    if type(x) is torch.Tensor and type(dim) is int and not _is_dynamo_compiling() and (s := x.shape):
        template = _IN_PLACE.get((len(s), s[-1], dim, config, x.dtype, x.get_device(), x.data_ptr() % 16))
        if template is not None and x.is_contiguous() and not x.requires_grad:  # passed the checks below
            template(x, x)
            return x
    dim = check(x, dim, "x")
    if x.requires_grad and torch.is_grad_enabled():
        raise ValueError("x requires grad, and softmax_ overwrites it: use softmax, which autograd follows")
    if _compiling(config):
        return x.copy_(_softmax_op(x, dim))
    return _apply("softmax_fwd", [x], dim, config, _IN_PLACE, out=x)


def softmax_backward(y: torch.Tensor, dy: torch.Tensor, dim: int = -1, *,
                     config: SoftmaxConfig | None = None) -> torch.Tensor:  # fmt: skip
    """The backward alone: dx = y * (dy - sum(y * dy, dim)), y the forward's output; batch invariant as softmax."""
    if (type(y) is torch.Tensor and type(dy) is torch.Tensor and type(dim) is int and not _is_dynamo_compiling()
            and (s := y.shape) and y.is_contiguous() and dy.is_contiguous()):  # fmt: skip
        template = _BACKWARD.get((len(s), s[-1], dim, config, y.dtype, y.get_device(), y.data_ptr() % 16,
                                  dy.dtype, dy.get_device(), dy.data_ptr() % 16))  # fmt: skip
        if template is not None and dy.shape == s and not (y.is_meta or dy.is_meta):  # meta: device -1 as CPU
            dx = torch.empty_like(y)
            template(y, dy, dx)
            return dx
    dim = check(y, dim, "y")
    check(dy, dim, "dy")
    if dy.shape != y.shape:
        raise ValueError(f"dy has shape {tuple(dy.shape)}, y has {tuple(y.shape)}: they must match")
    if dy.device != y.device:
        raise ValueError(f"dy is on {dy.device}, y on {y.device}: they must be on one device")
    if _compiling(config):
        return _softmax_backward_op(y, dy, dim)
    return _backward(y, dy, dim, config)


def autotune_picks() -> dict:
    """Which configs launches get (configs.py): `committed` (autotune_picks.json), `tuned` (this
    user's for this GPU and Triton) and `used`: each (kernel, N, dtype)'s here, and its source."""
    mode = f"interpreter: {configs.INTERPRETER_CONFIG.label()}" if INTERPRET else "tuned > committed > rule"
    gpu = torch.cuda.get_device_name() if not INTERPRET and torch.cuda.is_available() else None
    tuned = configs.read_picks(configs.user_picks_path(gpu)).get(gpu, {}).get("picks", []) if gpu else []
    used = [{"kernel": k, "N": n, "dtype": d, **c} for (k, n, d), c in launch.USED.items()]
    return {"mode": mode, "committed": configs.committed(), "tuned": tuned, "used": used}
