"""log_softmax(x, dim) in Triton, forward and backward: the public op.

F.log_softmax's semantics: any dim and layout (the dim is moved last and the rows made unit
stride, a copy only when they are not), fp32, fp16, bf16 and fp64, autograd, torch.compile.
The kernels (xent_kernels.log_softmax_fwd / _bwd) reduce a row as the softmax does (max and
sum of exponentials, online where the row loops) and end in another epilogue:
y = (x - max) - log(sum), dx = dy - exp(y) * sum(dy). A row too long for one program's
registers takes, on sm_90, the softmax's cluster kernels with that epilogue (cluster.py, LOG):
read once, not twice.

One autograd path, _LogSoftmax. Eager calls launch the kernels directly; while torch.compile
or torch.export traces, it calls the opaque custom ops kernels_triton::log_softmax and
kernels_triton::log_softmax_backward, each with a shape-only fake.
"""

from __future__ import annotations

import torch

from kernels_triton import cluster
from kernels_triton import xent_kernels as K
from kernels_triton.softmax import as_rows, check, from_rows
from kernels_triton.xent_launch import choose, launch, looped_from, programs, splits


def _launch(kernel, rows: list[torch.Tensor], m: int, n: int) -> None:
    """kernel over m rows of n elements; rows: the (m, n) tensors, output last. Rows the softmax
    takes over a cluster (cluster.applies) take its cluster kernels with the log epilogue (the tiles where
    the device refuses the cluster's size)."""
    direction = "fwd" if kernel is K.log_softmax_fwd else "bwd"
    if cluster.applies(direction, m, n, rows[0].dtype, rows[0].device, looped_from(rows[0].element_size())):
        fn, meta, warps, maxnreg = cluster.kernel_for(
            direction, n, rows[0].dtype, cluster.packs(rows), "log_softmax"
        )
        args = (*rows, n, *(r.stride(0) for r in rows))
        run = lambda: launch(fn, m, args, warps, cluster=meta["C"], maxnreg=maxnreg, **meta)
        if cluster.launched(run, rows[0].get_device(), n):  # else refused: the tiles below
            return
    block, one_pass, warps = choose(n, rows[0].element_size())
    grid = programs(m, n, rows[0].element_size(), one_pass, rows[0].device)
    off, split = splits(n, rows)
    launch(
        kernel, grid, (*rows, m, n, *(r.stride(0) for r in rows), off), warps,
        BLOCK=block, **split, ONE_PASS=one_pass, IS_FP64=rows[0].dtype == torch.float64,
    )  # fmt: skip


def _forward(x: torch.Tensor, dim: int, run: bool = True) -> torch.Tensor:
    """log_softmax(x, dim) of a checked x; run=False allocates the output only (the fake)."""
    x2 = as_rows(x, dim)
    y2 = torch.empty(x2.shape, dtype=x.dtype, device=x.device)
    if x2.numel() and run:
        _launch(K.log_softmax_fwd, [x2, y2], *x2.shape)
    return from_rows(y2, x, dim)


def _backward(y: torch.Tensor, dy: torch.Tensor, dim: int, run: bool = True) -> torch.Tensor:
    dy = dy if dy.dtype == y.dtype else dy.to(y.dtype)
    y2, dy2 = as_rows(y, dim), as_rows(dy, dim)
    dx2 = torch.empty(y2.shape, dtype=y.dtype, device=y.device)
    if y2.numel() and run:
        _launch(K.log_softmax_bwd, [y2, dy2, dx2], *y2.shape)
    return from_rows(dx2, y, dim)


@torch.library.custom_op("kernels_triton::log_softmax", mutates_args=())
def _log_softmax_op(x: torch.Tensor, dim: int) -> torch.Tensor:
    return _forward(x, dim)


@_log_softmax_op.register_fake
def _(x, dim):
    return _forward(x, dim, run=False)


@torch.library.custom_op("kernels_triton::log_softmax_backward", mutates_args=())
def _log_softmax_backward_op(y: torch.Tensor, dy: torch.Tensor, dim: int) -> torch.Tensor:
    return _backward(y, dy, dim)


@_log_softmax_backward_op.register_fake
def _(y, dy, dim):
    return _backward(y, dy, dim, run=False)


class _LogSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim):
        y = _log_softmax_op(x, dim) if torch.compiler.is_compiling() else _forward(x, dim)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        if torch.compiler.is_compiling():
            return _log_softmax_backward_op(y, dy, ctx.dim), None
        return _backward(y, dy, ctx.dim), None


def log_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """F.log_softmax(x, dim) with Triton kernels forward and backward (autograd works).

    x: fp32, fp16, bf16 or fp64, any shape and layout, on a CUDA device (or the CPU under
    TRITON_INTERPRET=1); the result has x's dtype and shape. A row of all -inf, or with NaN
    or +inf, gives NaN, as in torch. Under torch.compile it is one opaque op with its backward.
    """
    dim = check(x, dim, "x", "log_softmax")
    if torch.compiler.is_compiling() or (x.requires_grad and torch.is_grad_enabled()):
        return _LogSoftmax.apply(x, dim)
    return _forward(x, dim)


def log_softmax_backward(y: torch.Tensor, dy: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """The backward alone: dx = dy - exp(y) * sum(dy, dim) from the forward's output y."""
    dim = check(y, dim, "y", "log_softmax")
    check(dy, dim, "dy", "log_softmax")
    if dy.shape != y.shape:
        raise ValueError(f"dy has shape {tuple(dy.shape)}, y has {tuple(y.shape)}: they must match")
    return _backward(y, dy, dim)
