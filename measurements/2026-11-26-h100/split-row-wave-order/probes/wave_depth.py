"""The split-row forward loading two rows ahead instead of one, timed against the package's kernel
in the same process (swapped in as split_row._split_fwd_kernel). A chunk loaded one wave ahead
arrives about when the program needs it (wave_order.py: issuing it later, after the publish, made
every 16-bit shape 4-8% slower), so a load issued two waves ahead should never be waited for; the
price is one more chunk in registers (fewer programs an SM). At the default config (8192 / 4
warps) and at 4096 / 4 warps (half the values a thread, so the two chunks ahead cost what one does
at 8192). Each variant is checked against float64 first; triton.testing.do_bench medians, L2
flushed, variants in turns, best of two rounds."""

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
    _store_chunk,
    _value,
)


@triton.jit(do_not_specialize=list(NOT_SPECIALIZED))
def _fwd_ahead2(
    x_ptr, y_ptr, scratch_ptr, M, N, x_row_stride, y_row_stride, n_groups, split, n_words,
    CHUNK: tl.constexpr, LANES: tl.constexpr, NEEDS_MASK: tl.constexpr, SPIN_LIMIT: tl.constexpr,
    FALLBACK_TILE: tl.constexpr, PREFETCH: tl.constexpr, COMPENSATED: tl.constexpr,
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
        ahead1 = _load_ahead(x_ptr, first, x_row_stride, M, cols, N, float("-inf"), NEEDS_MASK)
        ahead2 = _load_ahead(x_ptr, first + n_groups, x_row_stride, M, cols, N, float("-inf"), NEEDS_MASK)
    for row in tl.range(first, M, n_groups):
        wave = (row - group) // n_groups
        tag = epoch + wave
        x_row = x_ptr + row * x_row_stride
        if PREFETCH:
            x = ahead1.to(tl.float32)
            ahead1 = ahead2
            ahead2 = _load_ahead(
                x_ptr, row + 2 * n_groups, x_row_stride, M, cols, N, float("-inf"), NEEDS_MASK
            )
        else:
            x = _load_chunk(x_row, cols, N, float("-inf"), NEEDS_MASK)
        m, e, s = _max_sum(x, COMPENSATED)
        words = scratch_ptr + HEADER_TL + ((wave % 2) * n_programs + group * split) * 2
        tl.atomic_xchg(words + 2 * part, _pack(m, tag), sem="relaxed")
        tl.atomic_xchg(words + 2 * part + 1, _pack(s, tag), sem="relaxed")
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
        m_row, s_row = _merge(m_all, s_all, COMPENSATED)
        scale = tl.where(m == float("-inf"), 0.0, tl.exp2((m - m_row) * LOG2E) / s_row)
        scale = tl.where(m_row == float("-inf"), float("nan"), scale)
        _store_chunk(y_ptr + row * y_row_stride, cols, N, e * scale, NEEDS_MASK)
    _finish(scratch_ptr, epoch, tl.cdiv(M, n_groups), n_words, 1024)


PACKAGE = sr._split_fwd_kernel
KERNELS = {"one": PACKAGE, "two": _fwd_ahead2}
CONFIGS = {"8192/4": None, "4096/4": sr.SplitConfig(chunk=4096, num_warps=4)}

if __name__ == "__main__":
    for shape in ((256, 262144), (1024, 131072), (2048, 65536), (64, 50257)):
        for dtype in (torch.bfloat16, torch.float16):
            torch.manual_seed(0)
            x = torch.randn(shape, device="cuda").to(dtype)
            x[:, -1] += 8  # the max last
            y = torch.empty_like(x)
            ref = torch.softmax(x.double(), -1)
            runs, err, programs = {}, {}, {}
            for kname, kernel in KERNELS.items():
                for cname, config in CONFIGS.items():
                    label = f"{kname} ahead {cname}"
                    sr._split_fwd_kernel = kernel
                    sr._PLANS.clear()
                    y.fill_(float("nan"))
                    sr.forward(x, y, config=config)
                    err[label] = (y.double() - ref).abs().max().item()
                    plan = next(iter(sr._PLANS.values()))
                    programs[label] = f"{plan.programs_per_sm}/SM{'p' if plan.config.prefetch else ''}"
                    runs[label] = (kernel, config)
            best = {}
            for _ in range(2):
                for label, (kernel, config) in runs.items():
                    sr._split_fwd_kernel = kernel
                    sr._PLANS.clear()
                    sr.forward(x, y, config=config)
                    us = (
                        triton.testing.do_bench(
                            lambda x=x, y=y, config=config: sr.forward(x, y, config=config),
                            warmup=25,
                            rep=150,
                            return_mode="median",
                        )
                        * 1e3
                    )
                    best[label] = min(us, best.get(label, us))
            sr._split_fwd_kernel = PACKAGE
            sr._PLANS.clear()
            print(
                f"fwd {shape[0]}x{shape[1]} {str(dtype)[6:]:8s} "
                + " | ".join(
                    f"{k} ({programs[k]}) {v:6.1f}{'' if err[k] < 1e-2 else ' BAD'}" for k, v in best.items()
                ),
                flush=True,
            )
