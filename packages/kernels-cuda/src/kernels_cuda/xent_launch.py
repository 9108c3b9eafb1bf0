"""The launches of cuda/09_cross_entropy.cu for cross_entropy_op.py: the forward (loss, lse, entropy
and the gradient per row), the backward from the saved lse, and the in-place scale of a gradient
the forward wrote; and where the gradient goes (`new_grad`: at the logits' rows' addresses mod 16,
so that the kernels store it in 16-byte packs). Plans come from row_kernels.xent_config.
"""

from __future__ import annotations

import ctypes
from functools import cache

import torch

from kernels_cuda import arrays
from kernels_cuda import log_softmax_op as rows
from kernels_cuda import row_kernels as rk


def dtype_of(x: torch.Tensor) -> str:
    return str(x.dtype).removeprefix("torch.")


def acc_dtype(dtype: str) -> torch.dtype:
    return torch.float64 if dtype == "float64" else torch.float32


def _acc_empty(n: int, like: torch.Tensor, dtype: str) -> torch.Tensor:
    out = torch.empty(n, dtype=acc_dtype(dtype), device=like.device)
    if arrays._poison:
        out.fill_(float("nan"))
    return out


def _grid(M: int, cfg) -> int:
    return min(-(-M // cfg.rpb), rk.MAX_GRID)


def new_grad(x2: torch.Tensor) -> torch.Tensor:
    """A fresh (M, N) gradient whose rows lie at the addresses of x2's rows mod 16 bytes where x2's
    rows are N apart (so the kernels store them in 16-byte packs; elsewhere they store elements)."""
    M, N = x2.shape
    if rows.row_stride(x2) != N:
        return rows.new_output((M, N), x2)
    lead = x2.data_ptr() % rk.PACK_BYTES // x2.element_size()
    return rows.new_output((M * N + lead,), x2)[lead:].view(M, N)


def run_forward(x2, t, ignore_index, smoothing, *, grad2=None, count=None, entropy=False):
    """The forward over rows x2 (M, N) with int64 targets t (M,): (loss or -logprob, lse,
    entropy or None) per row, fp32 (fp64 for fp64); the gradient into grad2 if given (rows of
    stride N, or x2 itself), scaled by 1 / count[0] if count is given."""
    dtype = dtype_of(x2)
    M, N = x2.shape
    cfg = rk.xent_config(N, dtype)
    loss, lse = _acc_empty(M, x2, dtype), _acc_empty(M, x2, dtype)
    ent = _acc_empty(M, x2, dtype) if entropy else None
    device_id = x2.get_device()
    staged = rk.xent_staged_packs(N, dtype, cfg, rk.stage_room(device_id)) if grad2 is not None else 0
    rk.launch(
        rk.cross_entropy_spec("cross_entropy_forward", dtype, cfg, entropy),
        device_id,
        _grid(M, cfg),
        cfg.threads,
        staged * rk.PACK_BYTES,
        tuple(0 if a is None else a.data_ptr() for a in (x2, grad2, t, loss, lse, ent, count)),
        ((ctypes.c_int64, M), (ctypes.c_int32, N), (ctypes.c_int64, rows.row_stride(x2)),
         (ctypes.c_int64, N if grad2 is None else rows.row_stride(grad2)), (ctypes.c_int64, ignore_index),
         (rk.acc_ctype(dtype), float(smoothing)), (ctypes.c_int32, staged)),
    )  # fmt: skip
    return loss, lse, ent


def run_backward(x2, t, lse, g_loss, ignore_index, smoothing, entropy=None, g_entropy=None):
    """grad (M, N) = g_loss (p - (1 - eps) onehot - eps / N) [- g_entropy p (log p + H)]."""
    dtype = dtype_of(x2)
    M, N = x2.shape
    cfg = rk.xent_config(N, dtype)
    grad2 = new_grad(x2)
    rk.launch(
        rk.cross_entropy_spec("cross_entropy_backward", dtype, cfg),
        x2.get_device(),
        _grid(M, cfg),
        cfg.threads,
        0,
        tuple(0 if a is None else a.data_ptr() for a in (x2, grad2, t, lse, g_loss, entropy, g_entropy)),
        ((ctypes.c_int64, M), (ctypes.c_int32, N), (ctypes.c_int64, rows.row_stride(x2)),
         (ctypes.c_int64, N), (ctypes.c_int64, ignore_index), (rk.acc_ctype(dtype), float(smoothing))),
    )  # fmt: skip
    return grad2


def run_scale(grad: torch.Tensor, g: torch.Tensor, applied: torch.Tensor) -> torch.Tensor:
    """grad *= g / applied in place (one-element tensors; applied: the factor grad already carries),
    on the device: nothing is read when they are equal. Returns g as the factor grad now carries."""
    dtype = dtype_of(grad)
    g = g.detach().reshape(1).to(acc_dtype(dtype), copy=True)
    device_id = grad.get_device()
    cfg = rk.scale_config(dtype)
    blocks = max(1, min(rk.sms(device_id) * rk.SCALE_BLOCKS_PER_SM, -(-grad.numel() // cfg.threads)))
    rk.launch(
        rk.cross_entropy_spec("cross_entropy_scale", dtype, cfg),
        device_id,
        blocks,
        cfg.threads,
        0,
        (grad.data_ptr(), g.data_ptr(), applied.data_ptr()),
        ((ctypes.c_int64, grad.numel()),),
    )
    return g


@cache
def unit_factor(device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """A constant 1 (never written): the factor a fresh gradient carries."""
    return torch.ones(1, dtype=dtype, device=device)
