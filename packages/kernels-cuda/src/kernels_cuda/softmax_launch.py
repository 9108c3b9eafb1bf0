"""Packing a planned softmax launch: every argument bound but the two pointers (`packed_launch`), and a
row plan's launch for any row count (`RowsCall`)."""

from __future__ import annotations

import ctypes

from kernels_cuda import codegen
from kernels_cuda.launch_types import MAX_GRID, Launch, RowPlan

ARG_TYPES = (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int64, ctypes.c_int32, ctypes.c_int64, ctypes.c_int64)
M_SLOT = 2  # the row count's place among ARG_TYPES


def packed_launch(launch: Launch, device_id: int, x_stride: int, y_stride: int, M: int, N: int):
    """The launch packed with every argument but the two pointers (x, y, M, N, strides, *extra)."""
    types = ARG_TYPES + (ctypes.c_int32,) * len(launch.extra)
    values = (0, 0, M, N, x_stride, y_stride, *launch.extra)
    return codegen.packed(launch.spec, device_id, launch.grid, launch.block, launch.shared_mem, types, values)


class RowsCall:
    """A row plan's packed launch over dense rows of N (x and a fresh y of stride N): any row
    count, its grid by integer arithmetic (`RowPlan.grid`), no planning."""

    __slots__ = ("launch", "rows_per_step", "group", "limit")

    def __init__(self, rows: RowPlan, device_id: int, N: int):
        self.launch = packed_launch(rows.launch(1), device_id, N, N, 1, N)
        self.rows_per_step, self.group = rows.rows_per_step, rows.group
        self.limit = MAX_GRID // rows.group

    def __call__(self, stream: int, x_ptr: int, y_ptr: int, M: int) -> None:
        steps = -(-M // self.rows_per_step)
        grid = self.group * (steps if steps < self.limit else self.limit)
        self.launch.rows(stream, grid, M_SLOT, M, x_ptr, y_ptr)
