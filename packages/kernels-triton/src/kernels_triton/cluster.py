"""Softmax over a thread-block cluster (sm_90), the host side: which launches take it
(applies: rows of MIN_COLS to max_cols columns), the block of a launch (_block: chunk, warps,
register cap), and the compiled kernel with the launch metadata that makes its grid clusters
of C blocks (compiled_launch). The kernels and their exchange: cluster_kernels.py.
"""

from __future__ import annotations

import functools

import torch
import triton

from kernels_triton import compiled_index
from kernels_triton.cluster_kernels import cluster_bwd_kernel, cluster_fwd_kernel, inbox_bytes
from kernels_triton.configs import DTYPES, INTERPRET, num_sms

MAX_CLUSTER = 16
MIN_COLS = 32768
MAX_COLS = 16384 * MAX_CLUSTER  # but the fp32 backward: up to 8192 * MAX_CLUSTER (max_cols)


@functools.cache
def _capable(device_index: int) -> bool:
    """Clusters of up to 16 blocks: sm_90 (H100, H200)."""
    return torch.cuda.get_device_capability(device_index)[0] == 9


# A forward launch of at most this many blocks an SM takes the one-wave form of _block (whose
# 8-warp blocks fit 5 an SM at 48-61 registers, 3 at the cap of 80).
ONE_WAVE_BLOCKS_PER_SM = 4


def fits_one_wave(n_rows: int, n_cols: int, sm_count: int) -> bool:
    """Whether a forward launch over n_rows rows of n_cols takes its one-wave form (_block)."""
    return n_rows * _cluster_size(n_cols) <= ONE_WAVE_BLOCKS_PER_SM * sm_count


def _block(
    n_cols: int, direction: str, dtype: torch.dtype, one_wave: bool = False
) -> tuple[int, int, int | None]:
    """(chunk, warps, register cap) of a block: 64 elements a thread of x (forward), of y and dy
    (backward). Past 8192 * MAX_CLUSTER columns a block holds 16384, its registers capped so that
    blocks share an SM: fp32 forward over 8 warps, 3 an SM (80 registers), backward over 8 warps,
    2 (128). Uncapped, the compiler takes more and fits one block fewer an SM. The 16-bit forward
    holds its chunk packed, 128 elements a thread over 4 warps in 64 registers of the cap of 96:
    5 blocks an SM, where 8 warps at 64 (64 elements a thread) fit 4 and spill at 262144 columns.

    A forward launch of one wave (fits_one_wave) waits on its slowest block's instructions, not on
    how many blocks share an SM: its blocks take 8 warps (32 elements a thread, shorter chains)
    and hold their exponentials across the exchange in every dtype (kernel_for). Only without
    batch invariance: the warps order a block's sums, so the form must not follow the row count."""
    if direction == "fwd" and one_wave:
        return (8192, 8, None) if n_cols <= 8192 * MAX_CLUSTER else (16384, 8, 80)
    if n_cols <= 8192 * MAX_CLUSTER:
        return 8192, 4, None
    if direction == "bwd":
        return 16384, 8, 128
    return (16384, 8, 80) if dtype == torch.float32 else (16384, 4, 96)


def _cluster_size(n_cols: int) -> int:
    chunk = _block(n_cols, "fwd", torch.float32)[0]  # the same chunk both directions, every dtype
    return triton.next_power_of_2(triton.cdiv(n_cols, chunk))  # tl.arange(0, C): powers of two


def max_cols(direction: str, dtype: torch.dtype) -> int:
    """The longest row the cluster kernel takes. The fp32 backward past 8192 * MAX_CLUSTER columns
    needs 147-162 registers a thread in 16384-element blocks, and capped at 128 it spills, which
    the split-row backward does not; the 16-bit backward fits."""
    if direction == "bwd" and dtype == torch.float32:
        return 8192 * MAX_CLUSTER
    return MAX_COLS


def applies(direction: str, n_rows: int, n_cols: int, dtype: torch.dtype, device: torch.device) -> bool:
    """Whether kernels_triton's launch of `direction` ("fwd" or "bwd") over n_rows rows of n_cols
    goes to the cluster kernel: the one place that decides it."""
    return (
        not INTERPRET
        and device.type == "cuda"
        and dtype in DTYPES
        and n_rows >= 1
        and MIN_COLS <= n_cols <= max_cols(direction, dtype)
        and _capable(device.index if device.index is not None else torch.cuda.current_device())
    )


def packs(tensors: list[torch.Tensor]) -> int:
    """VEC, the elements of a 16-byte pack, where Triton cannot see that the rows are whole
    16-byte packs but every tensor's rows sit at the same offset from a 16-byte boundary (aligned
    bases, equal strides), so that the kernels can split each row into head, aligned body and
    tail; else 0. (Triton specializes an integer argument on divisibility by 16: a stride and an
    N that are multiples of 16 elements tell it every row and every mask is whole packs.)"""
    vec = 16 // tensors[0].element_size()
    stride = tensors[0].stride(0)
    if stride % 16 == 0 and tensors[0].shape[1] % 16 == 0:
        return 0
    if all(t.data_ptr() % 16 == 0 and t.stride(0) == stride for t in tensors):
        return vec
    return 0


def kernel_for(direction: str, n_cols: int, dtype: torch.dtype, vec: int, one_wave: bool = False):
    """(kernel, constexprs, warps, register cap) of a launch of `direction` ("fwd", "bwd") on rows
    of n_cols in `dtype`; vec as packs gives it (0: rows of whole 16-byte packs); one_wave as
    fits_one_wave gives it. What compiled_launch compiles, and kernels_triton.offline without a GPU."""
    c = _cluster_size(n_cols)
    chunk, warps, maxnreg = _block(n_cols, direction, dtype, one_wave)
    if direction == "fwd":
        constexprs = {
            "C": c,
            "CHUNK": chunk,
            "NEEDS_MASK": n_cols != c * chunk,
            "COMPENSATED": dtype == torch.float32,
            "VEC": vec,
            # 16-bit: twice the registers of packed x, which one wave can spare (_block)
            "HOLD_EXPS": dtype == torch.float32 or one_wave,
            "THREADS": 32 * warps,
        }
        return cluster_fwd_kernel, constexprs, warps, maxnreg
    return cluster_bwd_kernel, {"C": c, "CHUNK": chunk, "VEC": vec}, warps, maxnreg


def compiled_launch(direction: str, tensors: list[torch.Tensor], one_wave: bool | None = None):
    """The compiled kernel of `direction` ("fwd": x, y; "bwd": y, dy, dx) for tensors laid out
    like `tensors` (2-D, unit column stride), and what a launch passes after the data pointers:
    (packed launch metadata, grid_x, the scalar and constexpr arguments). The metadata asks for
    num_ctas = C, so the launcher makes the grid grid_x * C blocks in clusters of C, and for the
    exchange's mbarrier and slots past Triton's own shared memory. one_wave: the forward's
    one-wave form (_block) or not; None: where the launch's rows fit one wave (fits_one_wave),
    which makes a row's reduction depend on the row count."""
    first = tensors[0]
    m, n = first.shape
    strides = tuple(t.stride(0) for t in tensors)
    single_wave = fits_one_wave(m, n, num_sms(first.get_device())) if one_wave is None else one_wave
    kernel, constexprs, warps, maxnreg = kernel_for(direction, n, first.dtype, packs(tensors), single_wave)
    c = constexprs["C"]
    cap = {} if maxnreg is None else {"maxnreg": maxnreg}
    specialization = (
        f"cluster_{direction}", n, strides, first.dtype, tuple(t.data_ptr() % 16 == 0 for t in tensors), c,
        tuple(constexprs.values()), warps, maxnreg,
    )  # fmt: skip
    compiled = compiled_index.load_or_compile(
        kernel,
        specialization,
        first.device.index,
        lambda: kernel.warmup(
            *tensors, n, *strides, 0, **constexprs, grid=(1,), num_warps=warps, num_stages=1, **cap
        ),
    )
    slot_base = -(-compiled.metadata.shared // 16) * 16
    packed = (warps, c, slot_base + inbox_bytes(c))
    return compiled, packed, m, (n, *strides, slot_base, *constexprs.values())
