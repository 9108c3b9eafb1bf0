"""Fused cross-entropy in CUDA C (cuda/09_cross_entropy.cu): the loss and its gradient from one
read of the logits, for torch CUDA tensors.

    cross_entropy(logits, target, ignore_index=-100, reduction="mean", label_smoothing=0.0,
                  inplace_backward=False)
    token_logprobs_and_entropy(logits, target, ignore_index=-100) -> (logprob, entropy)

F.cross_entropy's semantics for class-index targets: logits (C,), (M, C) or (M, C, d1, ...), the
classes along dim 1 (0 for 1-D); the mean over rows whose target is not ignore_index (NaN when
every target is ignored), label smoothing as torch's. Targets outside [0, C) that are not
ignore_index give NaN (torch raises; a kernel cannot without a host sync).

Where the loss is reduced ("mean", "sum") and logits need a gradient, the forward writes the
gradient (softmax - onehot) * scale while it has the row on chip, into a fresh buffer (or over the
logits: inplace_backward=True, as Liger), and the backward multiplies it by the upstream
gradient in place, a launch whose blocks all return at once when that gradient is 1 (the usual
`loss.backward()`): the logits are read once and the gradient written once. With
reduction="none" the backward recomputes the gradient from the saved per-row log-sum-exp. The
extra memory is the gradient and O(M) floats.

The mean and the sum are reduced on the device, by PARTS blocks each summing a chunk of the rows
and the last to finish summing their partials, in an order fixed by M (cross_entropy_reduce; the
mean's count taken before the forward where its gradient needs it, by the reduce itself otherwise):
a call is its allocations and launches, no torch op between them and no host sync, which matters
where the host sets the pace (short rows: an LM head's small vocabulary).

Under torch.compile the forward and backward are the opaque ops kernels_cuda::cross_entropy_forward
and kernels_cuda::cross_entropy_backward (the reduced loss's backward is one multiply there, and
inplace_backward does not apply).

The launches (and where a fresh gradient is put) are in xent_launch.py, the plans in
row_kernels.py. On sm_90, the forward of rows too long for one block's registers, without label
smoothing, runs over a thread-block cluster (cuda/11_cross_entropy_cluster.cu), the same outputs.

`kernels_cuda.cross_entropy` and `kernels_cuda.token_logprobs_and_entropy` are the functions
below (the package exports them; this module's name differs from theirs, so importing it never
shadows them).

token_logprobs_and_entropy: per row, log p(target) and the entropy of the softmax (fp32, fp64 for
fp64 logits), from the same kernel, with their backward (ignored rows: log-probability 0).
"""

from __future__ import annotations

import math

import torch

from kernels_cuda import log_softmax_op as rows
from kernels_cuda import row_kernels as rk
from kernels_cuda.xent_launch import (
    LSE_DTYPE,
    acc_dtype,
    dtype_of,
    new_grad,
    run_backward,
    run_forward,
    run_reduced,
    run_scale,
)

REDUCTIONS = ("mean", "sum", "none")
FN = "kernels_cuda.cross_entropy"


# --- checks and layouts (no GPU) ------------------------------------------------------------


def check(logits, target, ignore_index, reduction, label_smoothing, fn: str = FN) -> str:
    """logits' dtype name; a one-line TypeError / ValueError naming the argument otherwise."""
    dtype = rows.check_tensor(logits, fn, "logits")
    if not isinstance(target, torch.Tensor):
        raise TypeError(f"{fn}: target must be a torch tensor, got {type(target).__name__}")
    if target.dtype not in (torch.int64, torch.int32):
        raise TypeError(
            f"{fn}: target has dtype {str(target.dtype).removeprefix('torch.')}; class indices "
            "(int64 or int32) are supported, not class probabilities"
        )
    if target.device != logits.device:
        raise ValueError(f"{fn}: target is on {target.device}, logits on {logits.device}")
    if logits.dim() == 0:
        raise ValueError(f"{fn}: logits must have a class dim; got a 0-d tensor")
    expected = logits.shape[:1] + logits.shape[2:] if logits.dim() > 1 else ()
    if target.shape != expected:
        raise ValueError(
            f"{fn}: target has shape {tuple(target.shape)}; logits of shape {tuple(logits.shape)} "
            f"need {tuple(expected)}"
        )
    if type(ignore_index) is not int:
        raise TypeError(f"{fn}: ignore_index must be an int, got {type(ignore_index).__name__}")
    if reduction not in REDUCTIONS:
        raise ValueError(f"{fn}: reduction must be one of {', '.join(REDUCTIONS)}; got {reduction!r}")
    if not isinstance(label_smoothing, (int, float)) or not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{fn}: label_smoothing must be a number in [0, 1]; got {label_smoothing!r}")
    classes = logits.shape[class_dim(logits)]
    if not 0 < classes <= rk.MAX_N:
        raise ValueError(f"{fn}: logits have {classes} classes; 1 to {rk.MAX_N} are supported")
    return dtype


def class_dim(logits: torch.Tensor) -> int:
    return 1 if logits.dim() > 1 else 0


# --- the op ---------------------------------------------------------------------------------


def _rows(logits: torch.Tensor, target: torch.Tensor):
    """logits as rows (M, N) for the kernels, and the targets as M contiguous int64."""
    # rows at any address (the kernels split each at its first 16-byte boundary): a view wherever
    # logits' rows have their elements adjacent; 2-D logits whose elements are adjacent are their
    # own rows (no view made: each torch call costs the host)
    x2 = logits if logits.dim() == 2 and logits.stride(1) == 1 else rows.rows_of(logits, class_dim(logits), 1)
    if target.dtype is torch.int64 and target.dim() == 1 and target.is_contiguous():
        return x2, target
    return x2, target.reshape(-1).to(torch.int64).contiguous()


def _empty_loss(reduction, x2, target_shape, dtype):
    """The loss over no rows: none's empty rows, sum's 0, mean's NaN (0 / 0, as torch)."""
    if reduction == "none":
        return torch.empty(target_shape, dtype=dtype, device=x2.device)
    return torch.full((), 0.0 if reduction == "sum" else math.nan, dtype=dtype, device=x2.device)


def _grad_buffer(logits: torch.Tensor, x2: torch.Tensor, inplace: bool) -> torch.Tensor:
    """Where the forward writes the gradient: over the logits' own rows when asked and they are
    the kernel's rows (x2 a view of logits, rows of stride N), else a fresh buffer."""
    if inplace and x2.data_ptr() == logits.data_ptr() and x2.is_contiguous():
        return x2
    return new_grad(x2)


class _CrossEntropy(torch.autograd.Function):
    """Eager autograd: the gradient of a reduced loss is written by the forward (ctx.grad2) and
    scaled in place by the backward to its upstream gradient (ctx.ws, ctx.k: where the factor it
    carries is kept on the device, so that a second backward through the graph rescales it). The
    tensor returned is ctx's own: autograd.grad hands it over as is; AccumulateGrad into a leaf's
    .grad copies it first, as ctx still holds it."""

    @staticmethod
    def forward(ctx, logits, target, ignore_index, reduction, smoothing, inplace):
        shape = tuple(logits.shape)
        ctx.meta = (ignore_index, reduction, smoothing, shape, class_dim(logits))
        x2, t = _rows(logits, target)
        if x2.shape[0] == 0:
            ctx.grad2 = torch.zeros_like(x2)
            if reduction == "none":
                ctx.save_for_backward(x2, t, torch.empty(0, dtype=LSE_DTYPE, device=x2.device))
            return _empty_loss(reduction, x2, target.shape, logits.dtype)
        if reduction == "none":
            loss_rows, lse, _ = run_forward(x2, t, ignore_index, smoothing)
            ctx.save_for_backward(x2, t, lse)
            return loss_rows.to(logits.dtype).view(target.shape)
        ctx.grad2, ctx.k = _grad_buffer(logits, x2, inplace), 0
        loss, ctx.ws = run_reduced(x2, t, ignore_index, smoothing, reduction == "mean", grad2=ctx.grad2)
        return loss

    @staticmethod
    def backward(ctx, g):
        ignore_index, reduction, smoothing, shape, d = ctx.meta
        if reduction == "none":
            x2, t, lse = ctx.saved_tensors
            if x2.shape[0] == 0:
                return torch.zeros(shape, dtype=x2.dtype, device=x2.device), None, None, None, None, None
            g_rows = g.reshape(-1).to(acc_dtype(dtype_of(x2))).contiguous()
            grad2 = run_backward(x2, t, lse, g_rows, ignore_index, smoothing)
        else:
            grad2 = ctx.grad2
            if grad2.numel():
                ctx.k = run_scale(grad2, g, ctx.ws, ctx.k)
        # 2-D logits: the rows are the gradient's own shape, no view needed, unless grad2 is the
        # logits themselves (inplace_backward): a view of them, not the input tensor itself
        grad = grad2 if len(shape) == 2 and not grad2.requires_grad else rows.from_rows(grad2, shape, d)
        return grad, None, None, None, None, None


# torch.compile: the forward and backward as opaque ops, autograd through register_autograd.


def _fake_grad(logits: torch.Tensor) -> torch.Tensor:
    d = class_dim(logits)
    N = logits.shape[d]
    return rows.from_rows(logits.new_empty((logits.numel() // max(N, 1), N)), logits.shape, d)


@torch.library.custom_op("kernels_cuda::cross_entropy_forward", mutates_args=())
def _forward_op(
    logits: torch.Tensor,
    target: torch.Tensor,
    ignore_index: int,
    reduction: str,
    label_smoothing: float,
    with_grad: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(loss, per-row lse, the gradient of the loss (an empty tensor unless with_grad and the loss
    is reduced))."""
    x2, t = _rows(logits, target)
    M = x2.shape[0]
    grad2 = rows.new_output(x2.shape, x2) if with_grad and reduction != "none" else None
    if M == 0:  # (outputs of an op never alias each other)
        loss, lse = _empty_loss(reduction, x2, target.shape, logits.dtype), x2.new_empty(0, dtype=LSE_DTYPE)
    elif reduction == "none":
        loss_rows, lse, _ = run_forward(x2, t, ignore_index, label_smoothing)
        loss = loss_rows.to(logits.dtype).view(target.shape)
    else:
        lse = x2.new_empty(M, dtype=LSE_DTYPE)
        mean = reduction == "mean"
        loss, _ = run_reduced(x2, t, ignore_index, label_smoothing, mean, grad2=grad2, lse=lse)
    grad = logits.new_empty(0) if grad2 is None else rows.from_rows(grad2, logits.shape, class_dim(logits))
    return loss, lse, grad


@_forward_op.register_fake
def _(logits, target, ignore_index, reduction, label_smoothing, with_grad):
    check(logits, target, ignore_index, reduction, label_smoothing)
    M = target.numel()
    loss = logits.new_empty(tuple(target.shape) if reduction == "none" else ())
    grad = _fake_grad(logits) if with_grad and reduction != "none" else logits.new_empty(0)
    return loss, logits.new_empty(M, dtype=LSE_DTYPE), grad


@torch.library.custom_op("kernels_cuda::cross_entropy_backward", mutates_args=())
def _backward_op(
    logits: torch.Tensor,
    target: torch.Tensor,
    lse: torch.Tensor,
    g_loss: torch.Tensor,
    entropy: torch.Tensor | None,
    g_entropy: torch.Tensor | None,
    ignore_index: int,
    label_smoothing: float,
) -> torch.Tensor:
    """The logits' gradient from per-row upstream gradients g_loss (and of the entropy)."""
    x2, t = _rows(logits, target)
    if x2.shape[0] == 0:
        return torch.zeros_like(logits)

    def flat(v):
        return None if v is None else v.reshape(-1).to(acc_dtype(dtype_of(logits))).contiguous()

    grad2 = run_backward(
        x2, t, lse, flat(g_loss), ignore_index, label_smoothing, flat(entropy), flat(g_entropy)
    )
    return rows.from_rows(grad2, logits.shape, class_dim(logits))


@_backward_op.register_fake
def _(logits, target, lse, g_loss, entropy, g_entropy, ignore_index, label_smoothing):
    return _fake_grad(logits)


def _setup_forward(ctx, inputs, output):
    logits, target, ignore_index, reduction, label_smoothing, _ = inputs
    _, lse, grad = output
    ctx.meta = (ignore_index, reduction, label_smoothing)
    ctx.save_for_backward(logits, target, lse, grad)


def _backward_forward_op(ctx, g_loss, _g_lse, _g_grad):
    ignore_index, reduction, label_smoothing = ctx.meta
    logits, target, lse, grad = ctx.saved_tensors
    if reduction == "none":
        grad = _backward_op(logits, target, lse, g_loss, None, None, ignore_index, label_smoothing)
    else:
        grad = grad * g_loss.to(grad.dtype)
    return grad, None, None, None, None, None


_forward_op.register_autograd(_backward_forward_op, setup_context=_setup_forward)


def cross_entropy(
    logits: torch.Tensor,
    target: torch.Tensor,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
    inplace_backward: bool = False,
) -> torch.Tensor:
    """F.cross_entropy(logits, target, ignore_index=, reduction=, label_smoothing=) for class-index
    targets, the loss and its gradient from one read of the logits. inplace_backward=True writes
    the gradient over logits (they are not to be read after this call)."""
    check(logits, target, ignore_index, reduction, label_smoothing)
    if torch.compiler.is_compiling():
        with_grad = logits.requires_grad and reduction != "none"
        return _forward_op(logits, target, ignore_index, reduction, float(label_smoothing), with_grad)[0]
    if logits.requires_grad and torch.is_grad_enabled():
        return _CrossEntropy.apply(
            logits, target, ignore_index, reduction, float(label_smoothing), inplace_backward
        )
    x2, t = _rows(logits, target)
    if x2.shape[0] == 0:
        return _empty_loss(reduction, x2, target.shape, logits.dtype)
    if reduction == "none":
        return run_forward(x2, t, ignore_index, label_smoothing)[0].to(logits.dtype).view(target.shape)
    return run_reduced(x2, t, ignore_index, label_smoothing, reduction == "mean")[0]


# --- per-token log-probability and entropy --------------------------------------------------


@torch.library.custom_op("kernels_cuda::token_logprobs_and_entropy", mutates_args=())
def _token_op(
    logits: torch.Tensor, target: torch.Tensor, ignore_index: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(log p(target), entropy, lse), one each a row, fp32 (fp64 for fp64 logits)."""
    x2, t = _rows(logits, target)
    if x2.shape[0] == 0:  # (outputs of an op never alias each other)
        lp, ent, lse = (
            torch.empty(0, dtype=d, device=logits.device)
            for d in (*[acc_dtype(dtype_of(logits))] * 2, LSE_DTYPE)
        )
        return lp.view(target.shape), ent.view(target.shape), lse
    logprob, lse, ent = run_forward(x2, t, ignore_index, 0.0, entropy=True)
    return logprob.view(target.shape), ent.view(target.shape), lse


@_token_op.register_fake
def _(logits, target, ignore_index):
    dtype = check(logits, target, ignore_index, "none", 0.0, "kernels_cuda.token_logprobs_and_entropy")
    acc = acc_dtype(dtype)
    shape = tuple(target.shape)
    return (
        logits.new_empty(shape, dtype=acc),
        logits.new_empty(shape, dtype=acc),
        logits.new_empty(target.numel(), dtype=LSE_DTYPE),
    )


def _setup_token(ctx, inputs, output):
    logits, target, ignore_index = inputs
    _, entropy, lse = output
    ctx.ignore_index = ignore_index
    ctx.save_for_backward(logits, target, lse, entropy)


def _backward_token(ctx, g_logprob, g_entropy, _g_lse):
    logits, target, lse, entropy = ctx.saved_tensors
    # d logprob / dx = onehot - p: the loss's gradient with the upstream gradient negated
    g_loss = torch.zeros_like(lse) if g_logprob is None else -g_logprob
    with_entropy = g_entropy is not None
    grad = _backward_op(
        logits,
        target,
        lse,
        g_loss,
        entropy if with_entropy else None,
        g_entropy,
        ctx.ignore_index,
        0.0,
    )
    return grad, None, None


_token_op.register_autograd(_backward_token, setup_context=_setup_token)


def token_logprobs_and_entropy(
    logits: torch.Tensor, target: torch.Tensor, ignore_index: int = -100
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row: log softmax(logits)[target] and the softmax's entropy, from one read of the logits
    (fp32, fp64 for fp64 logits); differentiable. Rows whose target is ignore_index get
    log-probability 0 (their entropy still counts)."""
    check(logits, target, ignore_index, "none", 0.0, "kernels_cuda.token_logprobs_and_entropy")
    logprob, entropy, _ = _token_op(logits, target, ignore_index)
    return logprob, entropy
