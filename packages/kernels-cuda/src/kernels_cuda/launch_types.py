"""What planning works with: a launch, a row plan (a launch for any row count), a device.

A `RowPlan` is everything about a launch but the grid: the kernel, its block, its shared memory
and its extra arguments, decided from (N, dtype, layout, device) alone. The grid for M rows
follows from it by integer arithmetic (`RowPlan.grid`), so a call with a row count never seen
before needs no planning. Every kernel here gives each row the same work whatever the grid
(a block, or a cluster of blocks, takes whole rows, striding over the grid), so a row's
reduction order is a function of the plan alone: with one plan for every M (the batch-invariant
default), row i's bits never depend on the other rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernels_cuda import arrays
from kernels_cuda.codegen import Spec

PACK_BYTES = 16  # the widest access a thread can make in one instruction
MAX_GRID = 2**31 - 1
MAX_N = 2**31 - 2**20  # kernels index within a row with 32-bit ints, plus a block-stride of headroom

# Spec constants that change which rows a block holds or how many bounds checks a thread makes,
# never the order a row's elements are combined in (`reduction_order`).
ORDER_NEUTRAL_CONSTANTS = frozenset({"RPB", "FULL", "STAGED"})


@dataclass(frozen=True)
class Launch:
    """One kernel launch: the spec and its grid; arguments are (x, y, M, N, x_stride, y_stride,
    *extra) forward, (y, dy, dx, M, N, strides..., *extra) backward."""

    spec: Spec
    grid: int
    block: int
    shared_mem: int = 0
    extra: tuple[int, ...] = ()


@dataclass(frozen=True)
class RowPlan:
    """A launch for any number of rows: `rows_per_step` rows a block (a cluster of `group`
    blocks takes one row), up to MAX_GRID blocks, the kernels striding over the rest."""

    spec: Spec
    block: int
    shared_mem: int = 0
    extra: tuple[int, ...] = ()
    rows_per_step: int = 1
    group: int = 1

    def grid(self, M: int) -> int:
        return self.group * min(-(-M // self.rows_per_step), MAX_GRID // self.group)

    def launch(self, M: int) -> Launch:
        return Launch(self.spec, self.grid(M), self.block, self.shared_mem, self.extra)


def reduction_order(launch: Launch | RowPlan) -> tuple:
    """What decides the order a row's elements are reduced in: the kernel, its dtype, the
    constants that shape a row's work (threads, packs, vector width, cluster size) and the extra
    arguments (a cluster's chunk). Equal for two launches: each row's result is the same bits."""
    spec = launch.spec
    constants = tuple((k, v) for k, v in spec.constants if k not in ORDER_NEUTRAL_CONSTANTS)
    return (spec.source, spec.kernel, spec.dtype, constants, launch.extra)


@dataclass(frozen=True)
class Device:
    """What a plan needs to know about the GPU."""

    cc: int  # compute capability, e.g. 90
    max_shared_per_block: int  # opt-in dynamic shared memory limit, bytes
    sms: int  # streaming multiprocessors
    max_cluster: int = 16  # largest cluster this device launched (16 -> 8 if it refused 16)
    name: str = ""  # the device's name: its committed picks (picks.py) are looked up by it
    bandwidth: float = 0.0  # memory bytes a second: 2 x memory clock x bus width (0: unknown)
    threads_per_sm: int = 2048  # resident threads an SM at most


H100 = Device(cc=90, max_shared_per_block=227 * 1024, sms=132)
A100 = Device(cc=80, max_shared_per_block=163 * 1024, sms=108)


def full_vec(dtype: str) -> int:
    return PACK_BYTES // arrays.ITEMSIZE[dtype]


def pack_width(dtype: str, n: int, addresses: tuple[int, ...], row_strides: tuple[int, ...]) -> int:
    """16-byte packs when N, every base address and every row stride allow them, else 1 element.

    Rows of 600 fp32 (2400 B) or 600 bf16 (1200 B) are whole 16-byte multiples, so they get
    16-byte packs; an odd N or an offset view falls back to element-wide accesses."""
    vec = full_vec(dtype)
    size = arrays.ITEMSIZE[dtype]
    aligned = (
        n % vec == 0
        and all(a % PACK_BYTES == 0 for a in addresses)
        and all(s * size % PACK_BYTES == 0 for s in row_strides)
    )
    return vec if aligned else 1


def offsets_match(dtype: str, addresses: tuple[int, int], row_strides: tuple[int, int]) -> bool:
    """Whether x's and y's rows (addresses and row strides of the two, in that order) start at the
    same offset from a 16-byte boundary, row for row: then one split of a row into head, 16-byte
    body and tail serves both its read and its write (always so when both are whole packs)."""
    size = arrays.ITEMSIZE[dtype]
    (xa, ya), (xs, ys) = addresses, row_strides
    return (xa - ya) % PACK_BYTES == 0 and (xs - ys) * size % PACK_BYTES == 0
