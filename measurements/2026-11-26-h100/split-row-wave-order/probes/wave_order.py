"""The split-row forward with two changes to what lies on a wave's path, timed against the
package's kernel in the same process (variants swapped in as split_row._split_fwd_kernel):

  reorder     the load of the next row's chunk is issued after the chunk's partial is published,
              not before its reductions, so the publish does not queue behind a chunk of loads
  pair merge  the row's (M, S) from the peers' words in one reduction of (m, s) pairs, with the
              online-softmax rescale, instead of a max and then a sum (one cross-warp round less)

Each variant is checked against float64 first; triton.testing.do_bench medians, L2 flushed,
variants in turns, best of two rounds."""

import torch
import triton
import triton.language as tl
import triton.testing
from kernels_triton import split_row as sr
from kernels_triton.split_row import (
    EPOCH_TL,
    HEADER_TL,
    LOG2E,
    NOT_SPECIALIZED,
    _finish,
    _load_ahead,
    _load_chunk,
    _max_sum,
    _max_sum_from_memory,
    _merge,
    _pack,
    _shift,
    _store_chunk,
    _value,
)


@triton.jit
def _pair(m1, s1, m2, s2):
    m = tl.maximum(m1, m2)
    ref = tl.where(m == float("-inf"), 0.0, m)
    return m, s1 * tl.exp2((m1 - ref) * LOG2E) + s2 * tl.exp2((m2 - ref) * LOG2E)


@triton.jit
def _body(
    x_ptr, y_ptr, scratch_ptr, M, N, x_row_stride, y_row_stride, n_groups, split, n_words,
    CHUNK: tl.constexpr, LANES: tl.constexpr, NEEDS_MASK: tl.constexpr, SPIN_LIMIT: tl.constexpr,
    FALLBACK_TILE: tl.constexpr, PREFETCH: tl.constexpr, COMPENSATED: tl.constexpr,
    REORDER: tl.constexpr, PAIR_MERGE: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    group = pid // split
    part = pid % split
    n_programs = n_groups * split
    epoch = tl.load(scratch_ptr + EPOCH_TL, volatile=True)
    cols = part * CHUNK + tl.arange(0, CHUNK)
    lanes = tl.arange(0, LANES)
    first = group.to(tl.int64)
    if PREFETCH:
        x_ahead = _load_ahead(x_ptr, first, x_row_stride, M, cols, N, float("-inf"), NEEDS_MASK)
    for row in tl.range(first, M, n_groups):
        wave = (row - group) // n_groups
        tag = epoch + wave
        x_row = x_ptr + row * x_row_stride
        if PREFETCH:
            x = x_ahead.to(tl.float32)
            if not REORDER:
                x_ahead = _load_ahead(
                    x_ptr, row + n_groups, x_row_stride, M, cols, N, float("-inf"), NEEDS_MASK
                )
        else:
            x = _load_chunk(x_row, cols, N, float("-inf"), NEEDS_MASK)
        m, e, s = _max_sum(x, COMPENSATED)
        words = scratch_ptr + HEADER_TL + ((wave % 2) * n_programs + group * split) * 2
        tl.atomic_xchg(words + 2 * part, _pack(m, tag), sem="relaxed")
        tl.atomic_xchg(words + 2 * part + 1, _pack(s, tag), sem="relaxed")
        if PREFETCH and REORDER:
            x_ahead = _load_ahead(x_ptr, row + n_groups, x_row_stride, M, cols, N, float("-inf"), NEEDS_MASK)
        theirs = (lanes < split) & (lanes != part)
        m_words = tl.load(words + 2 * lanes, mask=theirs, other=0, volatile=True)
        s_words = tl.load(words + 2 * lanes + 1, mask=theirs, other=0, volatile=True)
        present = ((m_words >> 32) == tag) & ((s_words >> 32) == tag) | (theirs == 0)
        missing = LANES - tl.sum(present.to(tl.int32), axis=0)
        spins = 0
        while (missing > 0) & (spins < SPIN_LIMIT):
            m_words = tl.load(words + 2 * lanes, mask=theirs, other=0, volatile=True)
            s_words = tl.load(words + 2 * lanes + 1, mask=theirs, other=0, volatile=True)
            present = ((m_words >> 32) == tag) & ((s_words >> 32) == tag) | (theirs == 0)
            missing = LANES - tl.sum(present.to(tl.int32), axis=0)
            spins += 1
        m_all = tl.where(lanes == part, m, tl.where(lanes < split, _value(m_words), float("-inf")))
        s_all = tl.where(lanes == part, s, tl.where(lanes < split, _value(s_words), 0.0))
        if missing > 0:
            for j in range(split):
                if tl.sum(tl.where(lanes == j, present.to(tl.int32), 0), axis=0) == 0:
                    m_j, s_j = _max_sum_from_memory(x_row, j * CHUNK, N, CHUNK, FALLBACK_TILE, COMPENSATED)
                    m_all = tl.where(lanes == j, m_j, m_all)
                    s_all = tl.where(lanes == j, s_j, s_all)
            tl.atomic_add(scratch_ptr + 2, 1, sem="relaxed")
        if PAIR_MERGE:
            m_row, s_row = tl.reduce((m_all, s_all), 0, _pair)
        else:
            m_row, s_row = _merge(m_all, s_all, COMPENSATED)
        scale = tl.where(m == float("-inf"), 0.0, tl.exp2((m - m_row) * LOG2E) / s_row)
        scale = tl.where(m_row == float("-inf"), float("nan"), scale)
        _store_chunk(y_ptr + row * y_row_stride, cols, N, e * scale, NEEDS_MASK)
    _finish(scratch_ptr, epoch, tl.cdiv(M, n_groups), n_words, 1024)


@triton.jit(do_not_specialize=list(NOT_SPECIALIZED))
def _fwd_copy(
    x_ptr, y_ptr, scratch_ptr, M, N, x_row_stride, y_row_stride, n_groups, split, n_words,
    CHUNK: tl.constexpr, LANES: tl.constexpr, NEEDS_MASK: tl.constexpr, SPIN_LIMIT: tl.constexpr,
    FALLBACK_TILE: tl.constexpr, PREFETCH: tl.constexpr, COMPENSATED: tl.constexpr,
):  # fmt: skip
    _body(
        x_ptr, y_ptr, scratch_ptr, M, N, x_row_stride, y_row_stride, n_groups, split, n_words,
        CHUNK, LANES, NEEDS_MASK, SPIN_LIMIT, FALLBACK_TILE, PREFETCH, COMPENSATED, False, False,
    )  # fmt: skip


@triton.jit(do_not_specialize=list(NOT_SPECIALIZED))
def _fwd_reorder(
    x_ptr, y_ptr, scratch_ptr, M, N, x_row_stride, y_row_stride, n_groups, split, n_words,
    CHUNK: tl.constexpr, LANES: tl.constexpr, NEEDS_MASK: tl.constexpr, SPIN_LIMIT: tl.constexpr,
    FALLBACK_TILE: tl.constexpr, PREFETCH: tl.constexpr, COMPENSATED: tl.constexpr,
):  # fmt: skip
    _body(
        x_ptr, y_ptr, scratch_ptr, M, N, x_row_stride, y_row_stride, n_groups, split, n_words,
        CHUNK, LANES, NEEDS_MASK, SPIN_LIMIT, FALLBACK_TILE, PREFETCH, COMPENSATED, True, False,
    )  # fmt: skip


@triton.jit(do_not_specialize=list(NOT_SPECIALIZED))
def _fwd_pair(
    x_ptr, y_ptr, scratch_ptr, M, N, x_row_stride, y_row_stride, n_groups, split, n_words,
    CHUNK: tl.constexpr, LANES: tl.constexpr, NEEDS_MASK: tl.constexpr, SPIN_LIMIT: tl.constexpr,
    FALLBACK_TILE: tl.constexpr, PREFETCH: tl.constexpr, COMPENSATED: tl.constexpr,
):  # fmt: skip
    _body(
        x_ptr, y_ptr, scratch_ptr, M, N, x_row_stride, y_row_stride, n_groups, split, n_words,
        CHUNK, LANES, NEEDS_MASK, SPIN_LIMIT, FALLBACK_TILE, PREFETCH, COMPENSATED, False, True,
    )  # fmt: skip


@triton.jit(do_not_specialize=list(NOT_SPECIALIZED))
def _fwd_both(
    x_ptr, y_ptr, scratch_ptr, M, N, x_row_stride, y_row_stride, n_groups, split, n_words,
    CHUNK: tl.constexpr, LANES: tl.constexpr, NEEDS_MASK: tl.constexpr, SPIN_LIMIT: tl.constexpr,
    FALLBACK_TILE: tl.constexpr, PREFETCH: tl.constexpr, COMPENSATED: tl.constexpr,
):  # fmt: skip
    _body(
        x_ptr, y_ptr, scratch_ptr, M, N, x_row_stride, y_row_stride, n_groups, split, n_words,
        CHUNK, LANES, NEEDS_MASK, SPIN_LIMIT, FALLBACK_TILE, PREFETCH, COMPENSATED, True, True,
    )  # fmt: skip


PACKAGE = sr._split_fwd_kernel
VARIANTS = {
    "package": PACKAGE,
    "copy": _fwd_copy,
    "reorder": _fwd_reorder,
    "pair": _fwd_pair,
    "both": _fwd_both,
}
_shift  # noqa: B018 (imported for the kernels' globals)

if __name__ == "__main__":
    for shape in ((256, 262144), (1024, 131072), (2048, 65536), (64, 50257)):
        for dtype in (torch.bfloat16, torch.float16):
            torch.manual_seed(0)
            x = torch.randn(shape, device="cuda").to(dtype)
            x[:, -1] += 8  # the max last
            y = torch.empty_like(x)
            ref = torch.softmax(x.double(), -1)
            ok = {}
            for name, kernel in VARIANTS.items():
                sr._split_fwd_kernel = kernel
                sr._PLANS.clear()
                y.fill_(float("nan"))
                sr.forward(x, y)
                err = (y.double() - ref).abs().max().item()
                ok[name] = err
            best = {}
            for _ in range(2):
                for name, kernel in VARIANTS.items():
                    sr._split_fwd_kernel = kernel
                    sr._PLANS.clear()
                    sr.forward(x, y)
                    us = (
                        triton.testing.do_bench(
                            lambda x=x, y=y: sr.forward(x, y), warmup=25, rep=150, return_mode="median"
                        )
                        * 1e3
                    )
                    best[name] = min(us, best.get(name, us))
            sr._split_fwd_kernel = PACKAGE
            sr._PLANS.clear()
            print(
                f"fwd {shape[0]}x{shape[1]} {str(dtype)[6:]:8s} "
                + " | ".join(f"{k} {v:6.1f}{'' if ok[k] < 1e-2 else ' BAD'}" for k, v in best.items()),
                flush=True,
            )
