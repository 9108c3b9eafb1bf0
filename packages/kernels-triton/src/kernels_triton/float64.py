"""The float64 form, forward and backward: right, not fast (for gradcheck and scientific users). The fp32
kernels' exp2 of an fp32-rounded product and fp32 sums cap the accuracy near 1e-7; here every exponential
and sum is float64's. One program a row walks it in tiles of BLOCK (launch.plan_form: up to 1024)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit(do_not_specialize=["M"])
def softmax_fwd_f64_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, M, N, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row, y_row = x_ptr + row * x_row_stride, y_ptr + row * y_row_stride
    cols = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float64)
    for start in range(0, N, BLOCK):
        x = tl.load(x_row + start + cols, mask=start + cols < N, other=float("-inf"))
        m = tl.maximum(m, x)
    m_row = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], tl.float64)
    for start in range(0, N, BLOCK):
        x = tl.load(x_row + start + cols, mask=start + cols < N, other=float("-inf"))
        s += tl.exp(x - m_row)  # 0 past the row (-inf), but in a row of -inf (NaN, as torch's)
    inv = 1.0 / tl.sum(s, axis=0)
    for start in range(0, N, BLOCK):
        in_row = start + cols < N
        x = tl.load(x_row + start + cols, mask=in_row, other=0.0)
        tl.store(y_row + start + cols, tl.exp(x - m_row) * inv, mask=in_row)


@triton.jit(do_not_specialize=["M"])
def softmax_bwd_f64_kernel(
    y_ptr, dy_ptr, dx_ptr, y_row_stride, dy_row_stride, dx_row_stride, M, N, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    y_row, dy_row = y_ptr + row * y_row_stride, dy_ptr + row * dy_row_stride
    dx_row = dx_ptr + row * dx_row_stride
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float64)
    for start in range(0, N, BLOCK):
        in_row = start + cols < N
        y = tl.load(y_row + start + cols, mask=in_row, other=0.0)
        acc += y * tl.load(dy_row + start + cols, mask=in_row, other=0.0)
    dot = tl.sum(acc, axis=0)
    for start in range(0, N, BLOCK):
        in_row = start + cols < N
        y = tl.load(y_row + start + cols, mask=in_row, other=0.0)
        dy = tl.load(dy_row + start + cols, mask=in_row, other=0.0)
        tl.store(dx_row + start + cols, y * (dy - dot), mask=in_row)


KERNELS = {"softmax_fwd": softmax_fwd_f64_kernel, "softmax_bwd": softmax_bwd_f64_kernel}
