"""cross_entropy(logits, target) in Triton: the loss and its gradient from one read of the logits.

F.cross_entropy's semantics for class-index targets: logits (M, V) or (V,), target (M,) or
(), ignore_index, reduction "none" / "sum" / "mean" (mean divides by the number of targets
not ignored: all ignored gives NaN, as in torch), label_smoothing as torch defines it
(loss = (1 - eps) nll + eps * mean over classes of -log p; ignored rows count nothing).

Traffic. The forward (xent_kernels.cross_entropy_fwd) reads each row once for the loss and
keeps (max, sum of exp(x - max)) per row, O(M). When the logits need a gradient and the reduction is
"sum" or "mean", it also writes the gradient of the loss for an upstream gradient of 1 in the
same launch: from registers where the row fits in a program's (a short row of whole 16-byte
packs a warp's: xent_warp_rows.py; on sm_90 and without label smoothing, a long row a
cluster's: xent_cluster.py), else from a second, back-to-front read
that mostly hits L2. The backward then only scales it by the upstream gradient, in place, and
on the device skips even that when the upstream gradient is 1 (loss.backward()); so forward and
backward together read the logits once (twice at most) and write the gradient once, and hold
no copy of the logits. inplace_backward=True writes that gradient over the logits (as Liger
and QuACK offer): no memory beyond O(M), and the logits are gone after the forward.
With reduction="none" the upstream gradient differs by row, so the backward recomputes the
gradient from the saved statistics: one read of the logits, one write. xent_reduce's launches
around the forward, each over many programs: "mean" first counts the targets (the divisor the
gradient needs); "sum" and "mean" then sum the row losses.

A long row that is not whole 16-byte packs (GPT-2's V = 50257) is read and written as a head,
a body of 16-byte vectors and a tail, split by the row's offset from a 16-byte boundary
(xent_rows): a row's loss and gradient are the same bits in any batch that puts it at the
same offset (xent_kernels' invariants).

Under torch.compile the op is opaque (kernels_triton::cross_entropy_fwd / _bwd with fakes),
inplace_backward is not honoured, and the backward is the recompute: one read, one write.

A target outside [0, V) that is not ignore_index gives a NaN loss (torch raises); the check
would cost the host a wait on the device.
"""

from __future__ import annotations

import math

import torch

from kernels_triton import cluster, xent_cluster
from kernels_triton import xent_kernels as K
from kernels_triton import xent_reduce as R
from kernels_triton import xent_warp_rows as W
from kernels_triton.configs import INTERPRET
from kernels_triton.xent_launch import (
    align,
    choose,
    device_caps,
    launch,
    looped_from,
    programs,
    splits,
    streamed,
)

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
REDUCTIONS = ("none", "mean", "sum")
_SCALE_BLOCK = 4096
# Values a step of each of xent_reduce's R.PARTS programs (a chunk of cdiv(M, R.PARTS) values
# each): a step waits on its loads, so steps are wide, one a chunk up to M = R.PARTS * 4096.
_REDUCE_BLOCK = 4096

# Elements of a one-pass forward program's [ROWS, BLOCK] tile at least: rows shorter than this
# go several a program, so that a program has enough bytes in flight to cover memory latency.
ROW_TILE = 512


def ce_shape(n: int, itemsize: int) -> tuple[int, bool, int, int]:
    """(BLOCK, ONE_PASS, ROWS, num_warps) of cross_entropy_fwd, from (n, dtype) alone as choose():
    one pass, a tile of up to 2 KB is one warp's (its reductions in shuffles), a larger one has
    a warp a KB (the loss and the gradient hold more registers an element than log_softmax)."""
    block, one_pass, warps = choose(n, itemsize)
    if not one_pass:
        return block, False, 1, warps
    rows = max(1, ROW_TILE // block)
    tile = rows * block * itemsize
    return block, True, rows, 1 if tile <= 2048 else min(8, tile // 1024)


def check_args(logits, target, ignore_index, reduction, label_smoothing) -> None:
    if not isinstance(logits, torch.Tensor) or not isinstance(target, torch.Tensor):
        raise TypeError("logits and target must be torch.Tensors")
    if logits.dtype not in DTYPES:
        raise TypeError(
            f"logits has dtype {logits.dtype}; cross_entropy takes float32, float16, bfloat16, float64"
        )
    if target.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"target has dtype {target.dtype}: class indices (int64 or int32) only")
    if logits.dim() not in (1, 2) or target.dim() != logits.dim() - 1:
        raise ValueError(
            f"logits must be (M, V) with target (M,), or (V,) with a 0-d target; got {tuple(logits.shape)} "
            f"and {tuple(target.shape)}"
        )
    if logits.dim() == 2 and target.shape[0] != logits.shape[0]:
        raise ValueError(
            f"Expected input batch_size ({logits.shape[0]}) to match target batch_size ({target.shape[0]})."
        )
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if not 0.0 <= float(label_smoothing) <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if target.device != logits.device:
        raise ValueError(
            f"target is on {target.device}, logits on {logits.device}: they must be on one device"
        )
    if not logits.is_cuda and not INTERPRET:
        raise ValueError(
            f"logits is on {logits.device}, and Triton kernels run on CUDA devices (or the CPU with TRITON_INTERPRET=1)"
        )


def stat_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _count(target: torch.Tensor, ignore_index: int, run: bool) -> torch.Tensor:
    """xent_reduce's COUNT: the targets not ignored, counted by chunk, and reduce_loss's ticket."""
    count = torch.empty(R.PARTS.value + 1, dtype=torch.int32, device=target.device)
    if run:
        launch(
            R.count_targets,
            R.PARTS.value,
            (target, count, target.shape[0], ignore_index),
            8,
            BLOCK=_REDUCE_BLOCK,
        )
    return count


def _forward(
    x, target, ignore_index: int, reduction: str, smooth: float, grad: torch.Tensor | None, run=True
):
    """(loss, stats (2, M), count (R.PARTS + 1,)) of checked 2-D rows x; writes the gradient
    for an upstream gradient of 1 into `grad` when given ("sum"/"mean" only). run=False: shapes
    only. "none" counts nothing: its kernels never read the count."""
    m, n = x.shape
    rows = torch.empty(m, dtype=stat_dtype(x), device=x.device)
    stats = torch.empty(2, m, dtype=stat_dtype(x), device=x.device)
    out = rows if reduction == "none" else torch.empty((), dtype=x.dtype, device=x.device)
    if not run:
        return (out.to(x.dtype) if reduction == "none" else out), stats, _count(target, ignore_index, False)
    # the mean's divisor, and the ticket of an empty sum; a sum's forward zeroes the ticket itself
    count = _count(target, ignore_index, reduction == "mean" or (reduction == "sum" and not m))
    # where no gradient is written, G is x with row stride 0 (the kernels never store through it)
    g, stride_g, tensors = (x, 0, [x]) if grad is None else (grad, grad.stride(0), [x, grad])
    flags = dict(WRITE_GRAD=grad is not None, MEAN=reduction == "mean", ZERO_TICKET=reduction == "sum")
    if not m or (smooth == 0.0 and _cluster_forward(x, target, rows, stats, g, count, ignore_index, flags)):
        pass  # no rows, or the cluster took them
    elif (warp_rows := W.shape(n, x.element_size())) is not None:
        width, packs, full, rows_per = warp_rows
        launch(
            W.cross_entropy_warp_rows, _cdiv(m, rows_per),
            (x, target, rows, stats, g, count, m, n, x.stride(0), stride_g, ignore_index), rows_per,
            WIDTH=width, PACKS=packs, FULL=full, ROWS=rows_per, ALIGN=align(n, tensors), SMOOTH=float(smooth),
            **flags,
        )  # fmt: skip
    else:
        block, one_pass, rows_per, warps = ce_shape(n, x.element_size())
        grid = programs(_cdiv(m, rows_per), n, x.element_size(), one_pass, x.device)
        off, split = splits(n, tensors)
        launch(
            K.cross_entropy_fwd, grid,
            (x, target, rows, stats, g, count, m, n, x.stride(0), stride_g, off, ignore_index), warps,
            BLOCK=block, **split, ONE_PASS=one_pass, IS_FP64=x.dtype == torch.float64, SMOOTH=float(smooth),
            ROWS=rows_per, **flags,
        )  # fmt: skip
    if reduction == "none":
        return rows.to(x.dtype), stats, count
    parts = torch.empty(R.PARTS.value, dtype=rows.dtype, device=x.device)
    # An ordinary launch, after the forward has ended. As a programmatic dependent (sm_90) it would
    # start during the forward's last blocks and wait there, on SMs that the forward's blocks and
    # clusters still need: the H200 results page has the trial, slower at most shapes.
    launch(
        R.reduce_loss,
        R.PARTS.value,
        (rows, count, parts, out, m),
        8,
        BLOCK=_REDUCE_BLOCK,
        MEAN=reduction == "mean",
    )
    return out, stats, count


def _cluster_forward(x, target, rows, stats, g, count, ignore_index: int, flags: dict) -> bool:
    """xent_cluster's launch, where the row takes it (cluster.applies) and the device does not refuse
    its cluster size (then False: another form runs the launch)."""
    m, n = x.shape
    if not cluster.applies("fwd", m, n, x.dtype, x.device, looped_from(x.element_size())):
        return False
    off, split = splits(n, [x, g])
    kernel, meta, warps, maxnreg = xent_cluster.kernel_for(n, x.dtype, split["VEC"])
    args = (x, target, rows, stats, g, count, m, n, x.stride(0), g.stride(0), off, ignore_index)
    run = lambda: launch(
        kernel, m, args, warps, cluster=meta["C"], maxnreg=maxnreg, **{**meta, **split}, **flags
    )
    return cluster.launched(run, x.get_device(), n)


def _backward(x, target, stats, count, dloss, ignore_index: int, reduction: str, smooth: float, run=True):
    """The gradient recomputed from the saved statistics: one read of x, one write."""
    grad = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if not run or not grad.numel():
        return grad
    m, n = x.shape
    dloss = dloss.to(stat_dtype(x)).contiguous()
    block, warps = streamed(n, x.element_size())
    grid = programs(m, n, x.element_size(), False, x.device)
    off, split = splits(n, [x, grad])
    launch(
        K.cross_entropy_bwd, grid,
        (x, target, stats, dloss, grad, count, m, n, x.stride(0), grad.stride(0), off, ignore_index), warps,
        BLOCK=block, **split, IS_FP64=x.dtype == torch.float64, MEAN=reduction == "mean",
        SMOOTH=float(smooth), PER_ROW=reduction == "none",
    )  # fmt: skip
    return grad


def _scale_unless_one(grad: torch.Tensor, dloss: torch.Tensor) -> torch.Tensor:
    """grad *= dloss in place (dloss 0-d), on the device and only when dloss != 1."""
    if not grad.is_contiguous():  # written over strided logits: not one flat run of elements
        return grad.copy_(grad.to(stat_dtype(grad)) * dloss.to(stat_dtype(grad)))
    dloss = dloss.reshape(1)
    numel = grad.numel()
    if INTERPRET or not grad.is_cuda:
        grid = 1
    else:
        grid = min(_cdiv(numel, _SCALE_BLOCK), 4 * device_caps(grad.device.index)[0])
    aligned = math.gcd(numel, 16 // grad.element_size()) if numel else 1  # align() of one flat row
    launch(K.scale_unless_one, max(1, grid), (grad, dloss, numel), 4, BLOCK=_SCALE_BLOCK, ALIGN=aligned,
           IS_FP64=grad.dtype == torch.float64)  # fmt: skip
    return grad


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@torch.library.custom_op("kernels_triton::cross_entropy_fwd", mutates_args=())
def _forward_op(
    x: torch.Tensor, target: torch.Tensor, ignore_index: int, reduction: str, smooth: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _forward(x, target, ignore_index, reduction, smooth, None)


@_forward_op.register_fake
def _(x, target, ignore_index, reduction, smooth):
    return _forward(x, target, ignore_index, reduction, smooth, None, run=False)


@torch.library.custom_op("kernels_triton::cross_entropy_bwd", mutates_args=())
def _backward_op(
    x: torch.Tensor, target: torch.Tensor, stats: torch.Tensor, count: torch.Tensor, dloss: torch.Tensor,
    ignore_index: int, reduction: str, smooth: float,
) -> torch.Tensor:  # fmt: skip
    return _backward(x, target, stats, count, dloss, ignore_index, reduction, smooth)


@_backward_op.register_fake
def _(x, target, stats, count, dloss, ignore_index, reduction, smooth):
    return _backward(x, target, stats, count, dloss, ignore_index, reduction, smooth, run=False)


class _CrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, target, ignore_index, reduction, smooth, inplace):
        compiling = torch.compiler.is_compiling()
        grad = None
        if reduction != "none" and not compiling:
            grad = x if inplace else torch.empty(x.shape, dtype=x.dtype, device=x.device)
        if compiling:
            loss, stats, count = _forward_op(x, target, ignore_index, reduction, smooth)
        else:
            loss, stats, count = _forward(x, target, ignore_index, reduction, smooth, grad)
        ctx.args = (ignore_index, reduction, smooth)
        ctx.grad, ctx.inplace = grad, inplace and grad is not None
        ctx.save_for_backward(None if ctx.inplace else x, target, stats, count)
        return loss

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dloss):
        x, target, stats, count = ctx.saved_tensors
        if ctx.grad is not None:  # written by the forward for dloss == 1
            grad, ctx.grad = ctx.grad, None
            return _scale_unless_one(grad, dloss), None, None, None, None, None
        if x is None:
            raise RuntimeError("cross_entropy(inplace_backward=True): the gradient was already taken once")
        if torch.compiler.is_compiling():
            grad = _backward_op(x, target, stats, count, dloss, *ctx.args)
        else:
            grad = _backward(x, target, stats, count, dloss, *ctx.args)
        return grad, None, None, None, None, None


def cross_entropy(
    logits: torch.Tensor,
    target: torch.Tensor,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
    inplace_backward: bool = False,
) -> torch.Tensor:
    """F.cross_entropy(logits, target, ...) for class-index targets, with Triton kernels
    forward and backward (autograd works). The loss has logits' dtype, computed in fp32
    (fp64 for fp64). inplace_backward=True: the gradient is written over `logits` during the
    forward (the logits must not be needed afterwards; eager only)."""
    check_args(logits, target, ignore_index, reduction, label_smoothing)
    one = logits.dim() == 1
    x = logits.unsqueeze(0) if one else logits
    t = target.reshape(1) if one else target
    if x.stride(-1) != 1:
        x = x.contiguous()
    if not t.is_contiguous():
        t = t.contiguous()
    smooth = float(label_smoothing)
    if torch.compiler.is_compiling() or (logits.requires_grad and torch.is_grad_enabled()):
        loss = _CrossEntropy.apply(x, t, int(ignore_index), reduction, smooth, bool(inplace_backward))
    else:
        loss = _forward(x, t, int(ignore_index), reduction, smooth, None)[0]
    return loss.reshape(()) if one and reduction == "none" else loss
