"""The split-row softmax kernels: long rows, one read and one write per element, in Triton.

    y  = softmax(x)              along the last dim of a contiguous (M, N) matrix
    dx = y * (dy - sum(y * dy))  the backward, from the saved output y

The device code and its protocol; split_row.py plans and launches it.

Why the row is held once. A row of N elements is cut into SPLIT = ceil(N / CHUNK)
chunks, and a group of SPLIT programs takes one row at a time, each program one chunk.
A program loads its chunk into registers once and keeps it there until it writes the
output: between the load and the store it only needs two numbers per chunk from its
peers -- the chunk's max m and its sum s of exp(x - m) (backward: the chunk's sum of
y * dy) -- which the peers publish through a small global scratch buffer. Each program
merges the SPLIT partials itself, with the rescaling rule

    M = max_j m_j,   S = sum_j s_j * exp(m_j - M)      (a chunk of all -inf adds 0)

and writes y = exp(x - M) / S (in fp32 from the x it still holds; see the kernel for the
other cases). So x is read once and y written once: 2 * N * size bytes a row, the least
there is. (A looped single-program softmax reads a row twice, because one program's
registers cannot hold a row of 131072 fp32 values; SPLIT programs on different SMs can.)

Rows come in waves: the grid is persistent, G groups of SPLIT programs, and group g
takes rows g, g + G, g + 2G, ...; G is chosen so that every program fits on the GPU at
once (the occupancy of the compiled kernel times the number of SMs) and so that the last
wave is as full as the others. A row is never split over more programs than there are SMs:
a longer one gets wider programs (chunk and warps doubled together, the values a thread
unchanged, up to MAX_WARPS), and past that it is not split at all.

Loading ahead. A program's wave is load -> reduce -> publish -> wait for the peers' words
-> store, and while it waits nothing of its own is on its way from memory. With
`prefetch` (SplitConfig; the kernels' constexpr PREFETCH, so both versions come from one
source) a program issues the load of its chunk of its next row (row + G, masked off past
the last row, where nothing is read) as soon as it has the current one, and carries it
through the loop in the storage dtype to the next iteration, where it is converted to
fp32 and becomes the current chunk: the exchange of one wave overlaps the load of the
next. It is still one read per element: every chunk is loaded once, one wave before its
row is reduced, by the program that reduces and writes it; what is loaded ahead is the
next row's chunk, never the current row's again. The price is the registers of one more
chunk in the storage dtype (half those of its fp32 values for 16-bit storage, as many for
fp32), which can lower the programs an SM holds; the grid is sized from the compiled
kernel's occupancy with it or without it. `PREFETCH` holds the choice per dtype, and a
launch whose rows all fit in one wave does without (there is no next row).

The exchange. Every published partial is one 64-bit word: the fp32 value in the low
half and a 32-bit tag in the high half, tag = epoch + wave. A 64-bit store and a
64-bit load are single-copy atomic, so a reader that sees the tag it expects has the
value that goes with it: no fence or flag ordering is needed. Words are double
buffered by wave parity: a program can only overwrite its word for wave w + 2 after it
has seen every peer's word for wave w + 1, which each peer publishes after it has
finished reading wave w. The epoch lives in the scratch buffer on the device: every
program reads it at start, and the last program to finish (a counter of finished
programs) advances it past this launch's tags. So no launch can mistake a word of an
earlier one for its own, there is no host-side reset between calls, the state does not
leak from one call to the next, and it works the same inside a captured CUDA graph.
When the epoch reaches EPOCH_LIMIT the last program zeroes the words and restarts it at
1 (tag 0 is never expected). One scratch buffer per (device, stream): calls on one
stream run in order; calls on two streams never share words.

Why it cannot deadlock. A program waits for its peers' words for at most SPIN_LIMIT
polls; after that it computes each missing partial itself, from x in memory (a second
read of that chunk only) and counts the event in the scratch buffer. So its progress
never depends on another program being scheduled: the kernel finishes whether or not
the grid is co-resident -- another kernel on the same GPU, or Triton's CPU interpreter,
which runs programs one after another (there the first programs of each group take the
fallback, the later ones find the words published). Sizing the grid to what is
co-resident is what makes the fallback rare, not what makes the kernel terminate;
`fallback_count()` reports how often it ran. Whether to fall back, and for which peer, is
decided by reductions over the polled words that give every thread of a program the same
answer (each word is polled by one thread: LANES in _meta), so a program takes the
fallback, and its barriers, as a whole. Loading ahead changes none of this: a load
ahead waits on memory, not on a peer, and the words, tags and waves are the same.

Accuracy: the max is subtracted before the scaling by log2(e) (exp(x) = exp2(x *
log2(e))), so finite inputs up to FLT_MAX are exact where the true result is, and the
error of an exponential is proportional to |x - max|, not to |x|. Rows of all -inf
give NaN, a +inf or NaN in a row makes the row NaN: torch's results.
"""

from __future__ import annotations

import triton
import triton.language as tl

from kernels_triton.configs import INTERPRET
from kernels_triton.kernels import LOG2E
from kernels_triton.partials import merge, row_sum, shift, store_chunk, two_sum

# The scratch buffer (int64 words): a header, then two words (m, s) per program per wave parity.
EPOCH, FINISHED, FALLBACKS = 0, 1, 2
HEADER = 16
EPOCH_LIMIT = 1 << 30  # tags stay below 2**31: (tag << 32) never reaches the sign bit

# Polls of the peers' words before a program computes the missing partials itself. On a
# GPU a poll is one L2 round trip; the bound only matters when a peer is not running.
SPIN_LIMIT = 2 if INTERPRET else 1 << 16
FALLBACK_SUB = 1024  # tile width when a missing partial is computed from memory
# The kernels' integer arguments Triton does not specialize on (their values change with the grid,
# not the compiled code): only their width counts in a compiled kernel's specialization.
NOT_SPECIALIZED = ("n_groups", "split", "n_words")

# the same numbers as seen from device code (a kernel reads only constexpr globals)
EPOCH_TL, FINISHED_TL, FALLBACKS_TL = tl.constexpr(EPOCH), tl.constexpr(FINISHED), tl.constexpr(FALLBACKS)
HEADER_TL, EPOCH_LIMIT_TL = tl.constexpr(HEADER), tl.constexpr(EPOCH_LIMIT)


@triton.jit
def _pack(value, tag):
    """A published partial: tag in the high 32 bits, the fp32 value's bits in the low 32."""
    bits = value.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF
    return (tag << 32) | bits


@triton.jit
def _value(words):
    return (words & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True)


@triton.jit
def _load_chunk(row_ptr, cols, N, other, NEEDS_MASK: tl.constexpr):
    if NEEDS_MASK:
        v = tl.load(row_ptr + cols, mask=cols < N, other=other)
    else:
        v = tl.load(row_ptr + cols)
    return v.to(tl.float32)


@triton.jit
def _load_ahead(base_ptr, row, row_stride, M, cols, N, other, NEEDS_MASK: tl.constexpr):
    """The chunk of a row that may lie past the last one (row >= M: nothing is read), in the
    storage dtype: it is converted when it becomes the current row."""
    # the row's test as a tensor: the interpreter cannot broadcast a scalar boolean into a mask
    in_rows = tl.broadcast_to(row, cols.shape) < M
    if NEEDS_MASK:
        v = tl.load(base_ptr + row * row_stride + cols, mask=in_rows & (cols < N), other=other)
    else:
        v = tl.load(base_ptr + row * row_stride + cols, mask=in_rows, other=other)
    return v


@triton.jit
def _max_sum(x, COMPENSATED: tl.constexpr):
    """A chunk's partial: m = max(x), e = exp(x - m), s = sum(e). The max is subtracted
    before scaling by log2(e), so huge finite inputs stay finite."""
    m = tl.max(x, axis=0)
    e = tl.exp2((x - shift(m)) * LOG2E)
    return m, e, row_sum(e, COMPENSATED)


@triton.jit
def _max_sum_from_memory(
    row_ptr, start, N, CHUNK: tl.constexpr, SUB: tl.constexpr, COMPENSATED: tl.constexpr
):
    """The partial of chunk [start, start + CHUNK) of a row, read from memory in SUB-wide
    tiles: what a program computes for a peer whose word did not come."""
    offs = tl.arange(0, SUB)
    m = tl.max(tl.full([SUB], float("-inf"), tl.float32), axis=0)
    for k in range(0, CHUNK, SUB):
        cols = start + k + offs
        x = tl.load(row_ptr + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        m = tl.maximum(m, tl.max(x, axis=0))
    s = tl.sum(tl.zeros([SUB], tl.float32), axis=0)
    s_err = s
    for k in range(0, CHUNK, SUB):
        cols = start + k + offs
        x = tl.load(row_ptr + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        tile = row_sum(tl.exp2((x - shift(m)) * LOG2E), COMPENSATED)
        if COMPENSATED:
            s, s_err = two_sum(s, s_err, tile, 0.0)
        else:
            s += tile
    return m, s + s_err


@triton.jit
def _dot_from_memory(y_row, dy_row, start, N, CHUNK: tl.constexpr, SUB: tl.constexpr):
    """sum(y * dy) over chunk [start, start + CHUNK), read from memory (the fallback)."""
    offs = tl.arange(0, SUB)
    d = tl.sum(tl.zeros([SUB], tl.float32), axis=0)
    for k in range(0, CHUNK, SUB):
        cols = start + k + offs
        y = tl.load(y_row + cols, mask=cols < N, other=0.0).to(tl.float32)
        dy = tl.load(dy_row + cols, mask=cols < N, other=0.0).to(tl.float32)
        d += tl.sum(y * dy, axis=0)
    return d


@triton.jit
def _publish(word_ptr, value, tag):
    # an atomic, not a plain store, so that the compiler keeps it before the wait below
    tl.atomic_xchg(word_ptr, _pack(value, tag), sem="relaxed")


@triton.jit
def _finish(scratch_ptr, epoch, waves, n_words, CLEAR: tl.constexpr):
    """Run by every program at its end: the last one to finish moves the epoch past this
    launch's tags (zeroing the words and restarting at 1 when it reaches EPOCH_LIMIT)."""
    finished = tl.atomic_add(scratch_ptr + FINISHED_TL, 1, sem="acq_rel")
    if finished == tl.num_programs(0) - 1:
        next_epoch = epoch + waves
        if next_epoch >= EPOCH_LIMIT_TL:
            offs = tl.arange(0, CLEAR)
            for k in range(HEADER_TL, n_words, CLEAR):
                tl.store(scratch_ptr + k + offs, tl.zeros([CLEAR], tl.int64), mask=k + offs < n_words)
            next_epoch = epoch * 0 + 1
        tl.atomic_xchg(scratch_ptr + EPOCH_TL, next_epoch, sem="relaxed")
        tl.atomic_xchg(scratch_ptr + FINISHED_TL, 0, sem="relaxed")


@triton.jit(do_not_specialize=list(NOT_SPECIALIZED))
def split_fwd_kernel(
    x_ptr,
    y_ptr,
    scratch_ptr,
    M,
    N,
    x_row_stride,
    y_row_stride,
    n_groups,
    split,
    n_words,
    CHUNK: tl.constexpr,
    LANES: tl.constexpr,
    NEEDS_MASK: tl.constexpr,
    SPIN_LIMIT: tl.constexpr,
    FALLBACK_TILE: tl.constexpr,
    PREFETCH: tl.constexpr,
    COMPENSATED: tl.constexpr,  # SplitConfig.compensated
):
    pid = tl.program_id(0)
    group = pid // split
    part = pid % split
    n_programs = n_groups * split
    epoch = tl.load(scratch_ptr + EPOCH_TL, volatile=True)
    cols = part * CHUNK + tl.arange(0, CHUNK)
    lanes = tl.arange(0, LANES)  # one word a thread at most: see _meta
    first = group.to(tl.int64)  # int64: row * stride may pass 2**31
    if PREFETCH:
        x_ahead = _load_ahead(x_ptr, first, x_row_stride, M, cols, N, float("-inf"), NEEDS_MASK)
    for row in tl.range(first, M, n_groups):
        wave = (row - group) // n_groups
        tag = epoch + wave
        x_row = x_ptr + row * x_row_stride
        if PREFETCH:
            # the chunk loaded by the previous iteration (before the loop for the first row) is
            # the current one; the next row's is loaded now, a value carried to the next
            # iteration, so that its latency overlaps this row's reduction and exchange
            x = x_ahead.to(tl.float32)
            x_ahead = _load_ahead(x_ptr, row + n_groups, x_row_stride, M, cols, N, float("-inf"), NEEDS_MASK)
        else:
            x = _load_chunk(x_row, cols, N, float("-inf"), NEEDS_MASK)
        m, e, s = _max_sum(x, COMPENSATED)
        words = scratch_ptr + HEADER_TL + ((wave % 2) * n_programs + group * split) * 2
        _publish(words + 2 * part, m, tag)
        _publish(words + 2 * part + 1, s, tag)
        # wait for the peers' (m, s); lanes past split and the program's own lane count as present
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
        if missing > 0:  # a peer is late: compute its partial from memory (see the module docstring)
            for j in range(split):
                if tl.sum(tl.where(lanes == j, present.to(tl.int32), 0), axis=0) == 0:
                    m_j, s_j = _max_sum_from_memory(x_row, j * CHUNK, N, CHUNK, FALLBACK_TILE, COMPENSATED)
                    m_all = tl.where(lanes == j, m_j, m_all)
                    s_all = tl.where(lanes == j, s_j, s_all)
            tl.atomic_add(scratch_ptr + FALLBACKS_TL, 1, sem="relaxed")
        m_row, s_row = merge(m_all, s_all, COMPENSATED)
        if x_ptr.dtype.element_ty == tl.float32 and not PREFETCH:
            # fp32: y = exp(x - M) / S from the x the program holds, one rounded exponential
            # an element as in F.softmax (e * exp(m - M) / S below has two). An -inf element
            # writes 0; a row of all -inf (M = -inf) writes NaN, as torch does.
            y_row = y_ptr + row * y_row_stride
            store_chunk(y_row, cols, N, tl.exp2((x - m_row) * LOG2E) * (1.0 / s_row), NEEDS_MASK)
        else:
            # 16-bit outputs round far above that difference. With PREFETCH the form above ran
            # slower (not understood; the same registers offline), so the
            # chunk's own e is rescaled: y = e * exp(m - M) / S. A chunk whose max is -inf writes
            # e * 0 * S: 0, or NaN where a NaN made S NaN (tl.max passes over a NaN beside
            # nothing but -inf); a row of all -inf writes NaN.
            scale = tl.where(m == float("-inf"), 0.0 * s_row, tl.exp2((m - m_row) * LOG2E) / s_row)
            scale = tl.where(m_row == float("-inf"), float("nan"), scale)
            y_row = y_ptr + row * y_row_stride
            store_chunk(y_row, cols, N, e * scale, NEEDS_MASK)
    _finish(scratch_ptr, epoch, tl.cdiv(M, n_groups), n_words, 1024)


@triton.jit(do_not_specialize=list(NOT_SPECIALIZED))
def split_bwd_kernel(
    y_ptr,
    dy_ptr,
    dx_ptr,
    scratch_ptr,
    M,
    N,
    y_row_stride,
    dy_row_stride,
    dx_row_stride,
    n_groups,
    split,
    n_words,
    CHUNK: tl.constexpr,
    LANES: tl.constexpr,
    NEEDS_MASK: tl.constexpr,
    SPIN_LIMIT: tl.constexpr,
    FALLBACK_TILE: tl.constexpr,
    PREFETCH: tl.constexpr,
):
    pid = tl.program_id(0)
    group = pid // split
    part = pid % split
    n_programs = n_groups * split
    epoch = tl.load(scratch_ptr + EPOCH_TL, volatile=True)
    cols = part * CHUNK + tl.arange(0, CHUNK)
    lanes = tl.arange(0, LANES)  # one word a thread at most: see _meta
    first = group.to(tl.int64)  # int64: row * stride may pass 2**31
    if PREFETCH:
        y_ahead = _load_ahead(y_ptr, first, y_row_stride, M, cols, N, 0.0, NEEDS_MASK)
        dy_ahead = _load_ahead(dy_ptr, first, dy_row_stride, M, cols, N, 0.0, NEEDS_MASK)
    for row in tl.range(first, M, n_groups):
        wave = (row - group) // n_groups
        tag = epoch + wave
        y_row = y_ptr + row * y_row_stride
        dy_row = dy_ptr + row * dy_row_stride
        if PREFETCH:  # as in the forward
            y = y_ahead.to(tl.float32)
            dy = dy_ahead.to(tl.float32)
            y_ahead = _load_ahead(y_ptr, row + n_groups, y_row_stride, M, cols, N, 0.0, NEEDS_MASK)
            dy_ahead = _load_ahead(dy_ptr, row + n_groups, dy_row_stride, M, cols, N, 0.0, NEEDS_MASK)
        else:
            y = _load_chunk(y_row, cols, N, 0.0, NEEDS_MASK)
            dy = _load_chunk(dy_row, cols, N, 0.0, NEEDS_MASK)
        d = tl.sum(y * dy, axis=0)
        words = scratch_ptr + HEADER_TL + ((wave % 2) * n_programs + group * split) * 2
        _publish(words + 2 * part, d, tag)
        theirs = (lanes < split) & (lanes != part)
        d_words = tl.load(words + 2 * lanes, mask=theirs, other=0, volatile=True)
        present = ((d_words >> 32) == tag) | (theirs == 0)
        missing = LANES - tl.sum(present.to(tl.int32), axis=0)
        spins = 0
        while (missing > 0) & (spins < SPIN_LIMIT):
            d_words = tl.load(words + 2 * lanes, mask=theirs, other=0, volatile=True)
            present = ((d_words >> 32) == tag) | (theirs == 0)
            missing = LANES - tl.sum(present.to(tl.int32), axis=0)
            spins += 1
        d_all = tl.where(lanes == part, d, tl.where(lanes < split, _value(d_words), 0.0))
        if missing > 0:
            for j in range(split):
                if tl.sum(tl.where(lanes == j, present.to(tl.int32), 0), axis=0) == 0:
                    d_j = _dot_from_memory(y_row, dy_row, j * CHUNK, N, CHUNK, FALLBACK_TILE)
                    d_all = tl.where(lanes == j, d_j, d_all)
            tl.atomic_add(scratch_ptr + FALLBACKS_TL, 1, sem="relaxed")
        dx_row = dx_ptr + row * dx_row_stride
        store_chunk(dx_row, cols, N, y * (dy - tl.sum(d_all, axis=0)), NEEDS_MASK)
    _finish(scratch_ptr, epoch, tl.cdiv(M, n_groups), n_words, 1024)
