"""token_logprobs_and_entropy(logits, target): log p(target) and the entropy of each row, from one
read of the logits, with their backward: the quantities RL training recomputes.

    logp[i] = log_softmax(x[i])[t[i]]          (0 where t[i] == ignore_index)
    H[i]    = -sum_j p_ij log p_ij
    d logp / dx = onehot(t) - p                d H / dx = -p (log p + H)

The forward (token_stats_fwd, below) keeps (max, log-sum-exp) per row, O(M); the
backward reads the logits once and writes the gradient once. Both results are fp32 (fp64 for
fp64 logits). Under torch.compile the op is opaque (kernels_triton::token_stats_fwd / _bwd).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels_triton.cross_entropy import check_args, stat_dtype
from kernels_triton.xent_launch import choose, launch, programs, splits, streamed
from kernels_triton.xent_rows import (
    body_col,
    body_ptr,
    exp,
    lanes_in_row,
    row_start,
    row_stats,
    split,
    tile_stats,
    to_acc,
)


@triton.jit
def token_stats_fwd(
    X, T, LOGP, ENT, STATS, M, N, stride_x, OFF, ignore_index,
    BLOCK: tl.constexpr, ALIGN: tl.constexpr, VEC: tl.constexpr, ONE_PASS: tl.constexpr, IS_FP64: tl.constexpr,
):  # fmt: skip
    """Per row: log p[t] = (x[t] - max) - log S (0 where t == ignore_index) and the entropy
    H = -sum p log p = log S - sum exp(x - max)(x - max) / S; STATS keeps (max, log S)."""
    cols = tl.arange(0, BLOCK)
    PACK: tl.constexpr = VEC if VEC > 0 else ALIGN
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        x_row = row_start(X, row, stride_x, ALIGN)
        t = tl.load(T + row).to(tl.int64)
        counted = t != ignore_index
        x_t = to_acc(tl.load(x_row + t, mask=counted & (t >= 0) & (t < N), other=float("nan")), IS_FP64)
        if ONE_PASS:
            valid = lanes_in_row(cols, N, ALIGN)
            x = to_acc(tl.load(x_row + cols, mask=valid, other=float("-inf")), IS_FP64)
            big, _, total, _, sum_xe = tile_stats(x, valid, False, True)
        else:
            head, body, edges, in_edges = split(OFF + tl.cast(row, tl.int64) * stride_x, N, VEC)
            x_body = body_ptr(X, row, stride_x, head, ALIGN, VEC, True)
            big, total, _, sum_xe = row_stats(x_row, x_body, body, edges, in_edges, N, BLOCK, PACK, VEC, IS_FP64,
                                              False, True)  # fmt: skip
        log_total = tl.log(total)
        tl.store(LOGP + row, tl.where(counted, (x_t - big) - log_total, 0.0).to(LOGP.dtype.element_ty))
        tl.store(ENT + row, (log_total - sum_xe / total).to(ENT.dtype.element_ty))
        tl.store(STATS + row, big.to(STATS.dtype.element_ty))
        tl.store(STATS + M + row, log_total.to(STATS.dtype.element_ty))


@triton.jit
def _token_grad(x, c, t, big, log_total, dlogp, dent, ent):
    """dx of columns c: dlogp (onehot(t) - p) - dH p (log p + H)."""
    logp = (x - big) - log_total
    p = exp(logp)
    return dlogp * (tl.where(c == t, 1.0, 0.0) - p) - dent * tl.where(p > 0, p * (logp + ent), 0.0)


@triton.jit
def token_stats_bwd(
    X, T, STATS, ENT, DLOGP, DENT, G, M, N, stride_x, stride_g, OFF, ignore_index,
    BLOCK: tl.constexpr, ALIGN: tl.constexpr, VEC: tl.constexpr, LIKE: tl.constexpr, IS_FP64: tl.constexpr,
):  # fmt: skip
    """dx = dlogp (onehot(t) - p) - dH p (log p + H), one read of the row and one write;
    p log p is 0 where p is (x = -inf)."""
    cols = tl.arange(0, BLOCK)
    PACK: tl.constexpr = VEC if VEC > 0 else ALIGN
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        x_row = row_start(X, row, stride_x, ALIGN)
        g_row = row_start(G, row, stride_g, ALIGN)
        head, body, edges, in_edges = split(OFF + tl.cast(row, tl.int64) * stride_x, N, VEC)
        x_body = body_ptr(X, row, stride_x, head, ALIGN, VEC, True)
        g_body = body_ptr(G, row, stride_g, head, ALIGN, VEC, LIKE)
        t = tl.load(T + row).to(tl.int64)
        dlogp = tl.where(t != ignore_index, to_acc(tl.load(DLOGP + row), IS_FP64), 0.0)
        dent = to_acc(tl.load(DENT + row), IS_FP64)
        ent = to_acc(tl.load(ENT + row), IS_FP64)
        big = tl.load(STATS + row)
        log_total = tl.load(STATS + M + row)
        for start in range(0, body, BLOCK):
            c = start + cols
            valid = lanes_in_row(c, body, PACK)
            x = to_acc(tl.load(x_body + c, mask=valid, other=0.0), IS_FP64)
            g = _token_grad(x, c, body_col(t, head, N), big, log_total, dlogp, dent, ent)
            tl.store(g_body + c, g.to(G.dtype.element_ty), mask=valid)
        if VEC > 0:
            x = to_acc(tl.load(x_row + edges, mask=in_edges, other=0.0), IS_FP64)
            g = _token_grad(x, edges, t, big, log_total, dlogp, dent, ent)
            tl.store(g_row + edges, g.to(G.dtype.element_ty), mask=in_edges)


def _forward(x, target, ignore_index: int, run: bool = True):
    m, n = x.shape
    logp = torch.empty(m, dtype=stat_dtype(x), device=x.device)
    ent = torch.empty(m, dtype=stat_dtype(x), device=x.device)
    stats = torch.empty(2, m, dtype=stat_dtype(x), device=x.device)
    if run and m:
        block, one_pass, warps = choose(n, x.element_size())
        grid = programs(m, n, x.element_size(), one_pass, x.device)
        off, split = splits(n, [x])
        launch(
            token_stats_fwd, grid, (x, target, logp, ent, stats, m, n, x.stride(0), off, ignore_index), warps,
            BLOCK=block, ALIGN=split["ALIGN"], VEC=split["VEC"], ONE_PASS=one_pass, IS_FP64=x.dtype == torch.float64,
        )  # fmt: skip
    return logp, ent, stats


def _backward(x, target, stats, ent, dlogp, dent, ignore_index: int, run: bool = True):
    grad = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if run and grad.numel():
        m, n = x.shape
        block, warps = streamed(n, x.element_size())
        grid = programs(m, n, x.element_size(), False, x.device)
        dlogp = dlogp.to(stat_dtype(x)).contiguous()
        dent = dent.to(stat_dtype(x)).contiguous()
        off, split = splits(n, [x, grad])
        launch(
            token_stats_bwd, grid,
            (x, target, stats, ent, dlogp, dent, grad, m, n, x.stride(0), grad.stride(0), off, ignore_index), warps,
            BLOCK=block, **split, IS_FP64=x.dtype == torch.float64,
        )  # fmt: skip
    return grad


@torch.library.custom_op("kernels_triton::token_stats_fwd", mutates_args=())
def _forward_op(
    x: torch.Tensor, target: torch.Tensor, ignore_index: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _forward(x, target, ignore_index)


@_forward_op.register_fake
def _(x, target, ignore_index):
    return _forward(x, target, ignore_index, run=False)


@torch.library.custom_op("kernels_triton::token_stats_bwd", mutates_args=())
def _backward_op(
    x: torch.Tensor, target: torch.Tensor, stats: torch.Tensor, ent: torch.Tensor,
    dlogp: torch.Tensor, dent: torch.Tensor, ignore_index: int,
) -> torch.Tensor:  # fmt: skip
    return _backward(x, target, stats, ent, dlogp, dent, ignore_index)


@_backward_op.register_fake
def _(x, target, stats, ent, dlogp, dent, ignore_index):
    return _backward(x, target, stats, ent, dlogp, dent, ignore_index, run=False)


class _TokenStats(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, target, ignore_index):
        compiling = torch.compiler.is_compiling()
        logp, ent, stats = (_forward_op if compiling else _forward)(x, target, ignore_index)
        ctx.save_for_backward(x, target, stats, ent)
        ctx.ignore_index = ignore_index
        ctx.mark_non_differentiable(stats)
        return logp, ent

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dlogp, dent):
        x, target, stats, ent = ctx.saved_tensors
        dlogp = torch.zeros_like(ent) if dlogp is None else dlogp
        dent = torch.zeros_like(ent) if dent is None else dent
        backward = _backward_op if torch.compiler.is_compiling() else _backward
        return backward(x, target, stats, ent, dlogp, dent, ctx.ignore_index), None, None


def token_logprobs_and_entropy(
    logits: torch.Tensor, target: torch.Tensor, ignore_index: int = -100
) -> tuple[torch.Tensor, torch.Tensor]:
    """(log p(target) per row, entropy per row) of logits (M, V) and class indices target (M,),
    in fp32 (fp64 for fp64 logits); differentiable in the logits. Rows whose target is
    ignore_index get log p = 0 (and no gradient through it); their entropy is still computed."""
    check_args(logits, target, ignore_index, "none", 0.0)
    one = logits.dim() == 1
    x = logits.unsqueeze(0) if one else logits
    t = (target.reshape(1) if one else target).contiguous()
    if x.stride(-1) != 1:
        x = x.contiguous()
    if torch.compiler.is_compiling() or (logits.requires_grad and torch.is_grad_enabled()):
        logp, ent = _TokenStats.apply(x, t, int(ignore_index))
    else:
        logp, ent = _forward(x, t, int(ignore_index))[:2]
    return (logp.reshape(()), ent.reshape(())) if one else (logp, ent)
