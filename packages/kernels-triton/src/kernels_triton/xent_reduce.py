"""Cross-entropy's reductions over the M rows: the targets counted, the row losses summed.

One program cannot pull M values from memory quickly (each step waits on its loads), so both
kernels run PARTS programs, program p taking the p-th chunk of cdiv(M, PARTS) rows (the last
chunks short or empty). COUNT, (PARTS + 1,) int32, holds the count of each chunk (a chunk's
count fits an int32; the total is summed in int64 by count_total, a few hundred bytes from L2
for every program that reads it); COUNT[PARTS] is reduce_loss's ticket, zeroed by
count_targets (the mean) or by the forward (zero_ticket: the sum counts nothing). A chunk's rows
and the order of their sums depend only on M, so the loss is the same bits for the same input on
every run.
"""

from __future__ import annotations

import triton
import triton.language as tl

from kernels_triton.configs import INTERPRET

# Programs of each reduction, a power of two (count_total loads the counts as one vector). The
# interpreter runs programs one by one at a cost each: a few, still several chunks to a test.
PARTS = tl.constexpr(4 if INTERPRET else 64)


@triton.jit
def _chunk(M):
    """[start, end) of this program's rows."""
    size = tl.cdiv(M, PARTS)
    start = tl.program_id(0).to(tl.int64) * size
    return start, tl.minimum(start + size, M)


@triton.jit
def count_total(COUNT):
    """The number of targets counted, int64."""
    return tl.sum(tl.load(COUNT + tl.arange(0, PARTS)).to(tl.int64), 0)


@triton.jit
def grad_scale(COUNT, MEAN: tl.constexpr, IS_FP64: tl.constexpr):
    """The factor of the loss's gradient for an upstream gradient of 1, in the accumulator type:
    1 for the sum, 1 / count_total for the mean."""
    scale = 1.0
    if MEAN:
        if IS_FP64:
            scale = 1.0 / count_total(COUNT).to(tl.float64)
        else:
            scale = 1.0 / count_total(COUNT).to(tl.float32)
    return scale


@triton.jit
def zero_ticket(COUNT, ZERO: tl.constexpr):
    """COUNT[PARTS] = 0 from program 0 of a forward, where count_targets, which zeroes it, does not
    run (the sum): reduce_loss, launched after the forward, finds it zeroed."""
    if ZERO:
        if tl.program_id(0) == 0:
            tl.store(COUNT + PARTS, 0)


@triton.jit
def count_targets(T, COUNT, M, ignore_index, BLOCK: tl.constexpr):
    """COUNT[p] = the targets != ignore_index of program p's chunk; COUNT[PARTS] = 0.
    Launched on PARTS programs."""
    start, end = _chunk(M)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.int32)
    for s in range(start, end, BLOCK):
        t = tl.load(T + s + offs, mask=s + offs < end, other=ignore_index)
        acc += (t != ignore_index).to(tl.int32)
    tl.store(COUNT + tl.program_id(0), tl.sum(acc, 0))
    if tl.program_id(0) == 0:
        tl.store(COUNT + PARTS, 0)


@triton.jit
def reduce_loss(LOSS, COUNT, PART, OUT, M, BLOCK: tl.constexpr, MEAN: tl.constexpr):
    """OUT[0] = sum(LOSS) (/ count_total for MEAN), on PARTS programs: each sums its chunk
    into PART[p]; the last to take a ticket sums PART in index order, so the bits do not
    depend on which program finishes last."""
    start, end = _chunk(M)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], LOSS.dtype.element_ty)  # fp32, fp64 for fp64 logits
    for s in range(start, end, BLOCK):
        acc += tl.load(LOSS + s + offs, mask=s + offs < end, other=0.0)
    tl.store(PART + tl.program_id(0), tl.sum(acc, 0))
    tl.debug_barrier()  # the partial stored, by whichever thread, before the ticket is taken
    # acq_rel: the ticket releases this program's partial and acquires those of the programs
    # before it; the last ticket has seen every partial (read volatile: from L2, not L1)
    if tl.atomic_add(COUNT + PARTS, 1, sem="acq_rel", scope="gpu") == PARTS - 1:
        total = tl.sum(tl.load(PART + tl.arange(0, PARTS), volatile=True), 0)
        if MEAN:
            total = total / count_total(COUNT).to(total.dtype)
        tl.store(OUT, total.to(OUT.dtype.element_ty))
