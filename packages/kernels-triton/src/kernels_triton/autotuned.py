"""The Triton ladder's first rung: the plain row softmax, its launch left to `@triton.autotune`.

torch.softmax(x, -1) of 2-D x with contiguous rows, accumulated in fp32 (+inf or NaN: a NaN row). One
program a row walks it in BLOCK-wide chunks twice: an online softmax into the row's max M and sum S, then
exp(x - M) / S written; the autotuner times every (BLOCK, num_warps) in CONFIGS at each new N.
What it buys: the whole algorithm in about thirty lines, correct at every N, no heuristic. What it leaves:
two reads of a row, idle SMs at few long rows (the cluster form shares a row between blocks), twelve timed
launches at each new N, and the host time of Triton's launch path (launch.py's is less)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels_triton.configs import INTERPRET

ALL_CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (256, 512, 1024, 2048) for w in (2, 4, 8)]
# Under the CPU interpreter one config, so Triton times nothing (its benchmarker needs a GPU driver); the
# tests force the others one at a time.
CONFIGS = ALL_CONFIGS[:1] if INTERPRET else ALL_CONFIGS


@triton.autotune(configs=CONFIGS, key=["N"])
@triton.jit
def softmax_autotuned_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, N, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row, y_row = x_ptr + row * x_row_stride, y_ptr + row * y_row_stride
    cols = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)  # each lane's running max
    s = tl.zeros([BLOCK], tl.float32)  # and sum of exp(x - m)
    for start in range(0, N, BLOCK):
        x = tl.load(x_row + start + cols, mask=start + cols < N, other=float("-inf")).to(tl.float32)
        # NaN propagates into the lane's max, its sum and the row's. A lane that has seen only
        # -inf keeps s = 0 (exp(-inf - -inf) would be NaN).
        m_new = tl.maximum(m, x, propagate_nan=tl.PropagateNan.ALL)
        empty = m_new == float("-inf")
        s = tl.where(empty, 0.0, s * tl.exp(m - m_new) + tl.exp(x - m_new))
        m = m_new
    row_max = tl.max(m, 0)
    row_sum = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - row_max)), 0)
    for start in range(0, N, BLOCK):
        mask = start + cols < N
        x = tl.load(x_row + start + cols, mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - row_max) / row_sum
        tl.store(y_row + start + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def softmax_autotuned(x: torch.Tensor) -> torch.Tensor:
    if x.dim() != 2 or x.stride(-1) != 1:
        raise ValueError(
            f"x: a 2-D tensor with contiguous rows, got shape {tuple(x.shape)}, strides {x.stride()}"
        )
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"x: float32, float16 or bfloat16, got {x.dtype}")
    m, n = x.shape
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    if m and n:
        softmax_autotuned_kernel[(m,)](x, y, x.stride(0), y.stride(0), n)
    return y
