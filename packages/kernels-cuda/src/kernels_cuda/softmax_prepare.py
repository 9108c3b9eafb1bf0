"""Preparing a softmax call: one input layout -> the views, copies and launch it needs (no GPU).

    prepare(shape, strides, dtype, dim, variant, device, ...) -> Prepared

Plain Python over shapes, cached by layout in softmax_variants (`_prepare`); the launch comes
from the (N, dtype, layout) row plan, cached here (`cached_row_plan`, bounded).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from kernels_cuda import arrays, softmax_plans
from kernels_cuda.launch_types import MAX_N, Device, Launch, RowPlan, offsets_match, pack_width
from kernels_cuda.softmax_plans import VARIANTS, AutoConfig, row_plan

cached_row_plan = lru_cache(maxsize=4096)(row_plan)  # bounded: a few MB whatever the shapes seen


@dataclass(frozen=True)
class Prepared:
    """What a softmax call does for one input layout, decided before any GPU work.

    x is viewed with the softmax dim last (`moved`) as M rows of N. Rows that sit at one stride
    from each other are read in place (`x_row_stride`); otherwise (None) they are first copied to
    a contiguous buffer. Without out=, the result is allocated in `moved_shape` and returned as a
    view in x's dim order. With out=, the kernel writes straight into out's rows when they are
    distinct and collapse to one stride (`out_direct`), else into a temporary copied into out.
    `launch` is None when there is nothing to compute (an empty input); `rows` is its row plan.
    """

    dim: int
    moved: bool
    moved_shape: tuple[int, ...]
    M: int
    N: int
    x_row_stride: int | None
    y_row_stride: int  # of the rows the kernel writes: out's, or N for a fresh buffer
    out_direct: bool
    launch: Launch | None
    rows: RowPlan | None = None


def _moved(values: tuple[int, ...], d: int) -> tuple[int, ...]:
    return values[:d] + values[d + 1 :] + (values[d],)


def prepare(
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    dtype: str,
    dim: int,
    variant: str,
    device: Device,
    *,
    x_address: int = 0,
    out_strides: tuple[int, ...] | None = None,
    out_address: int = 0,
    cfg: AutoConfig | None = None,
    batch_invariant: bool = True,
) -> Prepared:
    """The `Prepared` call for x of `shape`/`strides` (elements) at byte address `x_address`
    (only its alignment matters), with out= of `out_strides` at `out_address` if given.

    Raises ValueError for a dim out of range, an unknown variant, rows too long for any kernel,
    or rows too long for the variant asked for. A 0-d input is prepared as shape (1,)."""
    fn = "kernels_cuda.softmax"
    if dtype not in arrays.SOFTMAX_DTYPES:
        raise TypeError(f"{fn}: unsupported dtype {dtype}; supported: {', '.join(arrays.SOFTMAX_DTYPES)}")
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise ValueError(f"{fn}: unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    d = arrays.normalize_dim(dim, len(shape), fn)
    if not shape:
        shape, strides, out_strides = (1,), (1,), None if out_strides is None else (1,)
    moved = d != len(shape) - 1
    moved_shape = _moved(tuple(shape), d)
    N, M = moved_shape[-1], math.prod(moved_shape[:-1])
    if N > MAX_N:
        raise ValueError(f"{fn}: rows of {N} elements along dim {dim}; at most {MAX_N} are supported")
    x_rows = arrays.row_stride(moved_shape, _moved(tuple(strides), d))
    x_stride, x_address = (N, 0) if x_rows is None else (x_rows, x_address)  # a copy is aligned
    y_stride, y_address, direct = N, 0, False
    if out_strides is not None:
        out_rows = arrays.row_stride(moved_shape, _moved(tuple(out_strides), d))
        if out_rows is not None and out_rows >= N:  # distinct rows: write straight into them
            y_stride, y_address, direct = out_rows, out_address, True
    launch = rows = None
    if M * N:
        vec = pack_width(dtype, N, (x_address, y_address), (x_stride, y_stride))
        same = offsets_match(dtype, (x_address, y_address), (x_stride, y_stride))
        rows = cached_row_plan(
            variant, N, dtype, vec, device, cfg or softmax_plans.AUTO, same, None if batch_invariant else M
        )
        launch = rows.launch(M)
    return Prepared(d, moved, moved_shape, M, N, x_rows, y_stride, direct, launch, rows)
