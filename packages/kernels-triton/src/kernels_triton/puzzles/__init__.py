"""The twelve Triton Puzzles (Sasha Rush's set), each kernel under the seed's name and
signature beside its torch spec, solved with every load and store masked.

    basics.py      1-6   add_kernel, add_mask2_kernel, add_vec_kernel, add_vec_block_kernel,
                         mul_relu_block_kernel, mul_relu_block_back_kernel
    reductions.py  7-9   sum_kernel, softmax_kernel, flashatt_kernel
    matmul.py      10-12 conv2d_kernel, dot_kernel, quant_dot_kernel
    harness.py           Puzzle, run(): fresh inputs, NaN-poisoned output, check against the spec

`python -m kernels_triton.puzzles` checks all twelve at the seed's sizes, on the GPU if
there is one, else under Triton's interpreter.
"""

from kernels_triton.puzzles import basics, matmul, reductions
from kernels_triton.puzzles.basics import (
    add_kernel,
    add_mask2_kernel,
    add_vec_block_kernel,
    add_vec_kernel,
    mul_relu_block_back_kernel,
    mul_relu_block_kernel,
)
from kernels_triton.puzzles.harness import Puzzle, Result, run
from kernels_triton.puzzles.matmul import conv2d_kernel, dot_kernel, quant_dot_kernel
from kernels_triton.puzzles.reductions import flashatt_kernel, softmax_kernel, sum_kernel

PUZZLES: list[Puzzle] = basics.PUZZLES + reductions.PUZZLES + matmul.PUZZLES

__all__ = [
    "PUZZLES",
    "Puzzle",
    "Result",
    "run",
    "add_kernel",
    "add_mask2_kernel",
    "add_vec_kernel",
    "add_vec_block_kernel",
    "mul_relu_block_kernel",
    "mul_relu_block_back_kernel",
    "sum_kernel",
    "softmax_kernel",
    "flashatt_kernel",
    "conv2d_kernel",
    "dot_kernel",
    "quant_dot_kernel",
]
