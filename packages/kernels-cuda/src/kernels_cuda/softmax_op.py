"""kernels_cuda's softmax as torch ops: `torch.ops.kernels_cuda.softmax` and `.softmax_backward`.

    torch.ops.kernels_cuda.softmax(x, dim, variant, batch_invariant) -> y
    torch.ops.kernels_cuda.softmax_backward(y, dy, dim, variant, batch_invariant) -> dx

Registered with torch.library: each has a fake implementation (shapes, strides and dtype without
running anything, for FakeTensor / meta tracing), and the forward's autograd runs the fused
backward kernel, so torch.compile(fullgraph=True, dynamic=True) and torch.export trace a call as
one node with symbolic row counts, and `y.sum().backward()` works.

`kernels_cuda.softmax` calls these only where they are needed: when autograd records the call (x
requires grad, grad mode on), when torch.compile or torch.export traces it, or for a fake tensor.
Otherwise it launches its planned kernel straight away (softmax_variants.py), skipping the
dispatcher's cost. Importing this module imports torch.
"""

from __future__ import annotations

import torch

from kernels_cuda import arrays, backward_call, softmax_variants

FN = "kernels_cuda.softmax"


def is_fake(t) -> bool:
    """A tensor with no data behind it (FakeTensor, a meta tensor, a functional wrapper)."""
    return t.device.type == "meta" or torch._subclasses.fake_tensor.is_fake(t)


def needs_op(x) -> bool:
    """Whether a torch tensor's call has to go through the op: autograd records it, or it is fake."""
    return (x.requires_grad and torch.is_grad_enabled()) or is_fake(x)


def _layout_like(t: torch.Tensor, dim: int, fn: str) -> torch.Tensor:
    """An empty tensor as the eager path returns one for `t` along `dim`: allocated with dim
    innermost, viewed in t's dim order (contiguous when dim is the last)."""
    if t.dtype not in _DTYPES:
        raise TypeError(f"{fn}: unsupported dtype {t.dtype}; supported: {', '.join(arrays.SOFTMAX_DTYPES)}")
    d = arrays.normalize_dim(dim, t.dim(), fn)
    if t.dim() == 0:
        return t.new_empty(())
    shape = list(t.shape)
    return t.new_empty(shape[:d] + shape[d + 1 :] + [shape[d]]).movedim(-1, d)


_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


@torch.library.custom_op("kernels_cuda::softmax", mutates_args=())
def softmax(x: torch.Tensor, dim: int, variant: str, batch_invariant: bool) -> torch.Tensor:
    return softmax_variants.run_softmax(x, dim, variant, None, batch_invariant)


@softmax.register_fake
def _softmax_fake(x, dim, variant, batch_invariant):
    return _layout_like(x, dim, FN)


@torch.library.custom_op("kernels_cuda::softmax_backward", mutates_args=())
def softmax_backward(
    y: torch.Tensor, dy: torch.Tensor, dim: int, variant: str, batch_invariant: bool
) -> torch.Tensor:
    return backward_call.run_softmax_backward(y, dy, dim, variant, batch_invariant)


@softmax_backward.register_fake
def _softmax_backward_fake(y, dy, dim, variant, batch_invariant):
    fn = "kernels_cuda.softmax_backward"
    if dy.shape != y.shape or dy.dtype != y.dtype:
        raise ValueError(
            f"{fn}: dy has shape {tuple(dy.shape)} and dtype {dy.dtype}; y has {tuple(y.shape)}, {y.dtype}"
        )
    return _layout_like(y, dim, fn)


def _setup_context(ctx, inputs, output) -> None:
    _, dim, _, batch_invariant = inputs
    ctx.save_for_backward(output)
    ctx.dim, ctx.batch_invariant = dim, batch_invariant


def _backward(ctx, grad):
    (y,) = ctx.saved_tensors
    # the backward variant is always auto: the forward's variants name forward kernels
    return softmax_backward(y, grad.to(y.dtype), ctx.dim, "auto", ctx.batch_invariant), None, None, None


softmax.register_autograd(_backward, setup_context=_setup_context)


def through_op(x, dim, variant, out, batch_invariant):
    """`kernels_cuda.softmax` through the op (autograd, tracing, fake tensors)."""
    if out is not None:
        raise RuntimeError(
            f"{FN}: out= does not support autograd or tracing (x requires grad, or a compiler traces the call)"
        )
    return softmax(x, dim, variant, batch_invariant)


def backward_through_op(y, dy, dim, variant, batch_invariant):
    return softmax_backward(y, dy, dim, variant, batch_invariant)
