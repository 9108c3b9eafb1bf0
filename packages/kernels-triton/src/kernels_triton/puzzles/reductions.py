"""Puzzles 7-9: reductions along a row too long for one block -- loops, running
statistics, and the online-softmax trick that makes FlashAttention one pass.

Each program owns B0 rows (queries) and walks the long axis T in blocks (B1 for 7 and
8; B0 for 9, whose signature has no B1).
"""

import triton
import triton.language as tl

from kernels_triton.puzzles.harness import Puzzle

# --- 7. Long sum -------------------------------------------------------------------------


def sum_spec(x):
    """x: float32[N0, T] -> float32[N0]   (N0 = 4, T = 200)"""
    return x.sum(1)


@triton.jit
def sum_kernel(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    # N1 is in the seed's signature but unused: its grid gives axis 1 one program (N1 = B1)
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for t in range(0, T, B1):  # a plain Python loop: it runs on the device, T // B1 steps
        cols = t + tl.arange(0, B1)
        mask = (rows[:, None] < N0) & (cols[None, :] < T)
        acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0), axis=1)
    tl.store(z_ptr + rows, acc, mask=rows < N0)


SUM = Puzzle(
    7,
    sum_kernel,
    sum_spec,
    {"x": lambda s: (s["N0"], s["T"])},
    lambda s: (s["N0"],),
    sizes={"N0": 4, "N1": 32, "T": 200},
    blocks={"B0": 1, "B1": 32},
    idea="a for loop over blocks of the long axis, carrying an accumulator in registers",
)


# --- 8. Long softmax: two loops --------------------------------------------------------


def softmax_spec(x):
    """x: float32[N0, T] -> float32[N0, T]   (N0 = 4, T = 200)"""
    x_max = x.max(1, keepdim=True)[0]
    x_exp = (x - x_max).exp()
    return x_exp / x_exp.sum(1, keepdim=True)


@triton.jit
def softmax_kernel(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    log2_e = 1.44269504  # exp(x) = exp2(x * log2(e)); exp2 is the instruction the GPU has
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    # loop 1: running max m and running sum d of exp(x - m). When the max grows from m to
    # m_new, the sum so far is rescaled: sum exp(x - m_new) = exp(m - m_new) * sum exp(x - m).
    m = tl.full([B0], float("-inf"), dtype=tl.float32)
    d = tl.zeros([B0], dtype=tl.float32)
    for t in range(0, T, B1):
        cols = t + tl.arange(0, B1)
        mask = (rows[:, None] < N0) & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=float("-inf"))
        m_new = tl.maximum(m, tl.max(x, axis=1))
        d = d * tl.exp2((m - m_new) * log2_e) + tl.sum(tl.exp2((x - m_new[:, None]) * log2_e), axis=1)
        m = m_new
    # loop 2: normalise and write
    for t in range(0, T, B1):
        cols = t + tl.arange(0, B1)
        mask = (rows[:, None] < N0) & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=float("-inf"))
        z = tl.exp2((x - m[:, None]) * log2_e) / d[:, None]
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], z, mask=mask)


SOFTMAX = Puzzle(
    8,
    softmax_kernel,
    softmax_spec,
    {"x": lambda s: (s["N0"], s["T"])},
    lambda s: (s["N0"], s["T"]),
    sizes={"N0": 4, "N1": 32, "T": 200},
    blocks={"B0": 1, "B1": 32},
    idea="online softmax: max and sum in one loop by rescaling the running sum, then one loop to write",
)


# --- 9. Simple FlashAttention: one loop ------------------------------------------------


def flashatt_spec(q, k, v):
    """q: float32[N0], k: float32[T], v: float32[T] -> float32[N0]   (N0 = T = 200)"""
    x = q[:, None] * k[None, :]
    x_exp = (x - x.max(1, keepdim=True)[0]).exp()
    soft = x_exp / x_exp.sum(1, keepdim=True)
    return (v[None, :] * soft).sum(1)


@triton.jit
def flashatt_kernel(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr):
    log2_e = 1.44269504
    i = tl.program_id(0) * B0 + tl.arange(0, B0)  # B0 queries
    q = tl.load(q_ptr + i, mask=i < N0, other=0.0)
    m = tl.full([B0], float("-inf"), dtype=tl.float32)
    d = tl.zeros([B0], dtype=tl.float32)
    acc = tl.zeros([B0], dtype=tl.float32)  # running sum of exp(s - m) * v
    for t in range(0, T, B0):  # B0 keys and values at a time
        j = t + tl.arange(0, B0)
        k = tl.load(k_ptr + j, mask=j < T, other=0.0)
        v = tl.load(v_ptr + j, mask=j < T, other=0.0)
        s = tl.where((j < T)[None, :], q[:, None] * k[None, :], float("-inf"))  # [queries, keys]
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp2((m - m_new) * log2_e)  # rescales what was summed under the old max
        p = tl.exp2((s - m_new[:, None]) * log2_e)
        d = d * alpha + tl.sum(p, axis=1)
        acc = acc * alpha + tl.sum(p * v[None, :], axis=1)
        m = m_new
    tl.store(z_ptr + i, acc / d, mask=i < N0)  # the softmax weights are never written out


FLASHATT = Puzzle(
    9,
    flashatt_kernel,
    flashatt_spec,
    {"q": lambda s: (s["N0"],), "k": lambda s: (s["T"],), "v": lambda s: (s["T"],)},
    lambda s: (s["N0"],),
    # the seed launches B0 = 200; Triton 3 blocks must be powers of two (tl.arange)
    sizes={"N0": 200, "T": 200},
    blocks={"B0": 256},
    idea="FlashAttention in one loop: the running max rescales both the sum and the weighted values",
)

PUZZLES = [SUM, SOFTMAX, FLASHATT]
