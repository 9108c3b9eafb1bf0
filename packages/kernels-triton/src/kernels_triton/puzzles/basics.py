"""Puzzles 1-6: loads and stores, masks, program ids, broadcasting, fusion, a backward.

Sizes are stated in each spec's docstring (the seed's jaxtyping annotations) with the
seed's values in brackets. Every load and store is masked, so sizes that are not
multiples of the blocks work.
"""

import torch
import triton
import triton.language as tl

from kernels_triton.puzzles.harness import Puzzle

# --- 1. Constant add: one program covers the whole vector (B0 >= N0) -----------------


def add_spec(x):
    """x: float32[N0] -> float32[N0]   (N0 = 32)"""
    return x + 10.0


@triton.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.arange(0, B0)  # block shapes are powers of two; the mask trims to N0
    x = tl.load(x_ptr + offs, mask=offs < N0)
    tl.store(z_ptr + offs, x + 10.0, mask=offs < N0)


ADD = Puzzle(
    1,
    add_kernel,
    add_spec,
    {"x": lambda s: (s["N0"],)},
    lambda s: (s["N0"],),
    sizes={"N0": 32},
    blocks={"B0": 32},
    idea="tl.load / tl.store on a block of B0 lanes, tl.arange(0, B0): a kernel is numpy on one block",
)


# --- 2. Constant add, blocked: many programs, the last one partial -------------------


def add2_spec(x):
    """x: float32[N0] -> float32[N0]   (N0 = 200)"""
    return x + 10.0


@triton.jit
def add_mask2_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.program_id(0) * B0 + tl.arange(0, B0)  # program i takes elements [i*B0, (i+1)*B0)
    mask = offs < N0  # the last block runs past N0
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 10.0, mask=mask)


ADD_MASK2 = Puzzle(
    2,
    add_mask2_kernel,
    add2_spec,
    {"x": lambda s: (s["N0"],)},
    lambda s: (s["N0"],),
    sizes={"N0": 200},
    blocks={"B0": 32},
    idea="tl.program_id splits the data over programs; a mask keeps the last, partial block in bounds",
)


# --- 3. Outer vector add: a 2D block from two 1D ones (B0 >= N0, B1 >= N1) -----------


def add_vec_spec(x, y):
    """x: float32[N0], y: float32[N1] -> float32[N1, N0]   (N0 = N1 = 32)"""
    return x[None, :] + y[:, None]


@triton.jit
def add_vec_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.arange(0, B0)  # columns: x
    j = tl.arange(0, B1)  # rows: y
    x = tl.load(x_ptr + i, mask=i < N0)
    y = tl.load(y_ptr + j, mask=j < N1)
    z = x[None, :] + y[:, None]  # [B1, B0] by broadcasting, as in torch
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], z, mask=(j[:, None] < N1) & (i[None, :] < N0))


ADD_VEC = Puzzle(
    3,
    add_vec_kernel,
    add_vec_spec,
    {"x": lambda s: (s["N0"],), "y": lambda s: (s["N1"],)},
    lambda s: (s["N1"], s["N0"]),
    sizes={"N0": 32, "N1": 32},
    blocks={"B0": 32, "B1": 32},
    idea="broadcasting [:, None] / [None, :] builds 2D blocks; row-major offsets j * N0 + i address them",
)


# --- 4. Outer vector add, blocked: a 2D grid of programs -----------------------------


def add_vec_block_spec(x, y):
    """x: float32[N0], y: float32[N1] -> float32[N1, N0]   (N0 = 100, N1 = 90)"""
    return x[None, :] + y[:, None]


@triton.jit
def add_vec_block_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)  # axis 0 of the grid walks x (columns)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)  # axis 1 walks y (rows)
    x = tl.load(x_ptr + i, mask=i < N0)
    y = tl.load(y_ptr + j, mask=j < N1)
    tl.store(
        z_ptr + j[:, None] * N0 + i[None, :],
        x[None, :] + y[:, None],
        mask=(j[:, None] < N1) & (i[None, :] < N0),
    )


ADD_VEC_BLOCK = Puzzle(
    4,
    add_vec_block_kernel,
    add_vec_block_spec,
    {"x": lambda s: (s["N0"],), "y": lambda s: (s["N1"],)},
    lambda s: (s["N1"], s["N0"]),
    sizes={"N0": 100, "N1": 90},
    blocks={"B0": 32, "B1": 32},
    idea="a 2D grid: program (i, j) owns one tile of the output; masks on both axes",
)


# --- 5. Fused outer multiplication + relu --------------------------------------------


def mul_relu_block_spec(x, y):
    """x: float32[N0], y: float32[N1] -> float32[N1, N0]   (N0 = 100, N1 = 90)"""
    return torch.relu(x[None, :] * y[:, None])


@triton.jit
def mul_relu_block_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0)
    y = tl.load(y_ptr + j, mask=j < N1)
    z = tl.maximum(x[None, :] * y[:, None], 0.0)  # the relu rides along: no second pass over z
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], z, mask=(j[:, None] < N1) & (i[None, :] < N0))


MUL_RELU_BLOCK = Puzzle(
    5,
    mul_relu_block_kernel,
    mul_relu_block_spec,
    {"x": lambda s: (s["N0"],), "y": lambda s: (s["N1"],)},
    lambda s: (s["N1"], s["N0"]),
    sizes={"N0": 100, "N1": 90},
    blocks={"B0": 32, "B1": 32},
    idea="fusion: two ops in one kernel keep the intermediate in registers, one trip to memory",
)


# --- 6. Its backward ------------------------------------------------------------------


def mul_relu_block_back_spec(x, y, dz):
    """x: float32[N1, N0], y: float32[N1], dz: float32[N1, N0] -> dx: float32[N1, N0]
    (N0 = 100, N1 = 90); z = relu(x * y[:, None])."""
    x = x.clone().requires_grad_(True)
    torch.relu(x * y[:, None]).backward(dz)
    return x.grad


@triton.jit
def mul_relu_block_back_kernel(x_ptr, y_ptr, dz_ptr, dx_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    offs = j[:, None] * N0 + i[None, :]
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + j, mask=j < N1)
    dz = tl.load(dz_ptr + offs, mask=mask)
    # chain rule: d relu(u)/du = [u > 0], du/dx = y; recompute u rather than store it
    dx = tl.where(x * y[:, None] > 0, dz * y[:, None], 0.0)
    tl.store(dx_ptr + offs, dx, mask=mask)


MUL_RELU_BLOCK_BACK = Puzzle(
    6,
    mul_relu_block_back_kernel,
    mul_relu_block_back_spec,
    {"x": lambda s: (s["N1"], s["N0"]), "y": lambda s: (s["N1"],), "dz": lambda s: (s["N1"], s["N0"])},
    lambda s: (s["N1"], s["N0"]),
    sizes={"N0": 100, "N1": 90},
    blocks={"B0": 32, "B1": 32},
    idea="a backward is a kernel too: recompute the cheap forward (x * y) instead of saving it",
)

PUZZLES = [ADD, ADD_MASK2, ADD_VEC, ADD_VEC_BLOCK, MUL_RELU_BLOCK, MUL_RELU_BLOCK_BACK]
