"""Puzzles 10-12: sliding windows and tiled matrix products -- a 2D convolution, a
batched matmul built from tl.dot tiles, and a matmul whose weights are 4-bit integers
unpacked in registers.

tl.dot runs with input_precision="ieee": full fp32 on the GPU (its default, tf32, keeps
10 mantissa bits and would need a looser check).
"""

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from kernels_triton.puzzles.harness import Puzzle

# --- 10. Two-dimensional convolution ---------------------------------------------------


def conv2d_spec(x, k):
    """x: float32[N0, H, W], k: float32[KH, KW] -> float32[N0, H, W]   (N0 = 4, H = W = 8, KH = KW = 4);
    z[:, i, j] = sum(k * x[:, i:i+KH, j:j+KW]), x zero-padded past its bottom and right edges."""
    n0, h, w = x.shape
    kh, kw = k.shape
    xp = F.pad(x, (0, kw, 0, kh), value=0.0)
    z = x.new_zeros(n0, h, w)
    for i in range(h):
        for j in range(w):
            z[:, i, j] = (k[None, :, :] * xp[:, i : i + kh, j : j + kw]).sum((1, 2))
    return z


@triton.jit
def conv2d_kernel(x_ptr, k_ptr, z_ptr, N0, H, W, KH: tl.constexpr, KW: tl.constexpr, B0: tl.constexpr):
    b = tl.program_id(0) * B0 + tl.arange(0, B0)  # B0 images
    a = tl.arange(0, KH)  # KH and KW are block shapes here: powers of two
    c = tl.arange(0, KW)
    k = tl.load(k_ptr + a[:, None] * KW + c[None, :])  # [KH, KW], loaded once, reused at every pixel
    for i in range(H):
        for j in range(W):
            rows = i + a
            cols = j + c
            # the window [B0, KH, KW]; masked loads past the edge read 0: the padding
            mask = (b < N0)[:, None, None] & (rows < H)[None, :, None] & (cols < W)[None, None, :]
            offs = b[:, None, None] * H * W + rows[None, :, None] * W + cols[None, None, :]
            x = tl.load(x_ptr + offs, mask=mask, other=0.0)
            z = tl.sum(tl.sum(x * k[None, :, :], axis=2), axis=1)
            tl.store(z_ptr + b * H * W + i * W + j, z, mask=b < N0)


CONV2D = Puzzle(
    10,
    conv2d_kernel,
    conv2d_spec,
    {"x": lambda s: (s["N0"], s["H"], s["W"]), "k": lambda s: (s["KH"], s["KW"])},
    lambda s: (s["N0"], s["H"], s["W"]),
    sizes={"N0": 4, "H": 8, "W": 8, "KH": 4, "KW": 4},
    blocks={"B0": 1},
    idea="3D blocks and masks as padding: a window [B0, KH, KW] per output pixel, the filter kept in registers",
)


# --- 11. Batched matrix multiplication ---------------------------------------------------


def dot_spec(x, y):
    """x: float32[N2, N0, MID], y: float32[N2, MID, N1] -> float32[N2, N0, N1]   (N2 = 4, N0 = N1 = MID = 32)"""
    return x @ y


@triton.jit
def dot_kernel(
    x_ptr,
    y_ptr,
    z_ptr,
    N0,
    N1,
    N2,
    MID,
    B0: tl.constexpr,
    B1: tl.constexpr,
    B2: tl.constexpr,
    B_MID: tl.constexpr,
):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)  # rows of x and z
    j = tl.program_id(1) * B1 + tl.arange(0, B1)  # columns of y and z
    for bb in range(B2):  # B2 matrices of the batch
        b = tl.program_id(2) * B2 + bb
        n0 = tl.where(b < N2, N0, 0)  # a batch index past N2 masks everything
        n1 = tl.where(b < N2, N1, 0)
        acc = tl.zeros([B0, B1], dtype=tl.float32)
        for k0 in range(0, MID, B_MID):  # z tile = sum over k-blocks of x tile @ y tile
            k = k0 + tl.arange(0, B_MID)
            x = tl.load(
                x_ptr + b * N0 * MID + i[:, None] * MID + k[None, :],
                mask=(i[:, None] < n0) & (k[None, :] < MID),
                other=0.0,
            )
            y = tl.load(
                y_ptr + b * MID * N1 + k[:, None] * N1 + j[None, :],
                mask=(k[:, None] < MID) & (j[None, :] < n1),
                other=0.0,
            )
            acc += tl.dot(x, y, input_precision="ieee")
        tl.store(
            z_ptr + b * N0 * N1 + i[:, None] * N1 + j[None, :],
            acc,
            mask=(i[:, None] < n0) & (j[None, :] < N1),
        )


DOT = Puzzle(
    11,
    dot_kernel,
    dot_spec,
    {"x": lambda s: (s["N2"], s["N0"], s["MID"]), "y": lambda s: (s["N2"], s["MID"], s["N1"])},
    lambda s: (s["N2"], s["N0"], s["N1"]),
    sizes={"N0": 32, "N1": 32, "N2": 4, "MID": 32},
    blocks={"B0": 16, "B1": 16, "B2": 1, "B_MID": 16},
    idea="tiling: a matmul is a sum over k-blocks of small tl.dot products, one output tile per program",
)


# --- 12. Quantized matrix multiplication -----------------------------------------------

FPINT = tl.constexpr(32 // 4)  # 4-bit values packed in one int32 word
GROUP = tl.constexpr(8)  # consecutive weights sharing one scale and one shift


def _nibbles(words):
    """int32[..., n] -> int32[..., n * FPINT]: the 4-bit values, lowest bits first."""
    shifts = torch.arange(FPINT.value, dtype=torch.int32) * 4
    return ((words[..., None] >> shifts) & 0xF).flatten(-2)


def quant_dot_spec(scale, offset, weight, activation):
    """scale: float32[N0, MID / GROUP], offset: int32[N0] (MID = 64; in general
    int32[N0, MID / (GROUP * FPINT)]), weight: int32[N0, MID / FPINT],
    activation: float32[MID, N1] -> float32[N0, N1]   (N0 = N1 = 32, MID = 64).

    Weight (r, c) is nibble c % FPINT of word c // FPINT of row r; it dequantises to
    scale[r, g] * (weight - shift[r, g]) for its group g = c // GROUP, whose 4-bit shift
    is nibble g of the row's offset words."""
    n0 = weight.shape[0]
    w = _nibbles(weight)  # [N0, MID]
    shift = _nibbles(offset.reshape(n0, -1))  # [N0, MID / GROUP]
    dequant = scale.repeat_interleave(GROUP.value, 1) * (w - shift.repeat_interleave(GROUP.value, 1))
    return dequant @ activation


@triton.jit
def quant_dot_kernel(
    scale_ptr,
    offset_ptr,
    weight_ptr,
    activation_ptr,
    z_ptr,
    N0,
    N1,
    MID,
    B0: tl.constexpr,
    B1: tl.constexpr,
    B_MID: tl.constexpr,
):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)  # weight rows
    j = tl.program_id(1) * B1 + tl.arange(0, B1)  # activation columns
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)  # weight columns of this step
        g = k // GROUP  # and their groups
        mask = (i[:, None] < N0) & (k[None, :] < MID)
        # unpack in registers: load the packed word of each weight, shift its nibble down
        words = tl.load(weight_ptr + i[:, None] * (MID // FPINT) + (k // FPINT)[None, :], mask=mask, other=0)
        w = (words >> ((k % FPINT) * 4)[None, :]) & 0xF
        shift_words = tl.load(
            offset_ptr + i[:, None] * (MID // (GROUP * FPINT)) + (g // FPINT)[None, :], mask=mask, other=0
        )
        shift = (shift_words >> ((g % FPINT) * 4)[None, :]) & 0xF
        scale = tl.load(scale_ptr + i[:, None] * (MID // GROUP) + g[None, :], mask=mask, other=0.0)
        a = tl.load(
            activation_ptr + k[:, None] * N1 + j[None, :],
            mask=(k[:, None] < MID) & (j[None, :] < N1),
            other=0.0,
        )
        acc += tl.dot(scale * (w - shift).to(tl.float32), a, input_precision="ieee")
    tl.store(z_ptr + i[:, None] * N1 + j[None, :], acc, mask=(i[:, None] < N0) & (j[None, :] < N1))


QUANT_DOT = Puzzle(
    12,
    quant_dot_kernel,
    quant_dot_spec,
    {
        "scale": lambda s: (s["N0"], s["MID"] // GROUP.value),
        "offset": lambda s: (
            (s["N0"],) if s["MID"] == GROUP.value * FPINT.value else (s["N0"], s["MID"] // 64)
        ),
        "weight": lambda s: (s["N0"], s["MID"] // FPINT.value),
        "activation": lambda s: (s["MID"], s["N1"]),
    },
    lambda s: (s["N0"], s["N1"]),
    sizes={"N0": 32, "N1": 32, "MID": 64},
    blocks={"B0": 16, "B1": 16, "B_MID": 64},
    int_inputs=("offset", "weight"),
    idea="quantisation: 8 weights per int32, dequantised with shifts and masks in registers right before tl.dot",
)

PUZZLES = [CONV2D, DOT, QUANT_DOT]
