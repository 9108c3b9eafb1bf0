"""Device helpers that combine a row's partials, shared by the forms that split a row over
programs (split_row.py) or the blocks of a cluster (cluster.py): each piece of a row reduces
to (m, s), its max and its sum of exp(x - m), and merge() rescales them to the row's.
"""

from __future__ import annotations

import triton
import triton.language as tl

from kernels_triton.kernels import LOG2E


@triton.jit
def store_chunk(row_ptr, cols, N, value, NEEDS_MASK: tl.constexpr):
    if NEEDS_MASK:
        tl.store(row_ptr + cols, value.to(row_ptr.dtype.element_ty), mask=cols < N)
    else:
        tl.store(row_ptr + cols, value.to(row_ptr.dtype.element_ty))


@triton.jit
def shift(m):
    """What exponents are taken relative to: the max, or 0 where the max is -inf (a chunk of
    all -inf: exp(-inf - -inf) would be NaN, exp(-inf - 0) is the 0 it should be)."""
    return tl.where(m == float("-inf"), 0.0, m)


@triton.jit
def two_sum(a, a_err, b, b_err):
    """(a + a_err) + (b + b_err) as an fp32 sum and what its rounding lost (Knuth's TwoSum:
    exact for any order of a and b, with no multiplication for the compiler to fuse)."""
    s = a + b
    b_part = s - a
    a_part = s - b_part
    return s, (a - a_part) + (b - b_part) + a_err + b_err


@triton.jit
def row_sum(v, COMPENSATED: tl.constexpr):
    """sum(v) over axis 0; COMPENSATED carries each addition's rounding error along (about
    one rounding in all, where a plain fp32 sum rounds once per addition: a thread adds its
    elements one after another, so the largest term meets dozens of roundings)."""
    if COMPENSATED:
        s, err = tl.reduce((v, tl.zeros_like(v)), 0, two_sum)
        return s + err
    else:
        return tl.sum(v, axis=0)


@triton.jit
def merge(m_all, s_all, COMPENSATED: tl.constexpr):
    """(M, S) of a row from its chunks' (m_j, s_j), s_j taken relative to shift(m_j). A chunk
    with m_j = -inf adds its s_j unscaled: 0, or NaN where it holds a NaN beside nothing but
    -inf (tl.max passes over NaN), which must still make the row NaN."""
    m_row = tl.max(m_all, axis=0)
    weight = tl.exp2((shift(m_all) - m_row) * LOG2E)
    return m_row, row_sum(tl.where(m_all == float("-inf"), s_all, s_all * weight), COMPENSATED)
