"""What a puzzle is, and how one is checked against its spec.

A puzzle is a Triton kernel with the seed's name and signature, beside a torch spec that
says what it must compute. `run` makes fresh inputs (uniform in [-0.5, 0.5), packed int32
words over their full range), fills the output with NaN so that any element the kernel
does not write fails the check, launches the kernel on the seed's grid, and compares
with the spec evaluated in float64.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

# The seed's test() compares with torch.allclose(rtol=1e-3, atol=1e-3): the specs are
# sums of up to a few hundred terms, so fp32 kernels land well inside it.
RTOL = ATOL = 1e-3

Sizes = dict[str, int]


@dataclass(frozen=True)
class Puzzle:
    """One puzzle.

    inputs:  argument name -> its shape, from the sizes (N0, N1, T, ...), in the kernel's order.
    output:  the output's shape, from the sizes.
    sizes / blocks: the seed's problem sizes and block sizes, passed to the kernel by name.
    int_inputs: inputs that are int32 words (packed 4-bit values); the rest are fp32.
    idea:    what the puzzle teaches.
    """

    number: int
    kernel: Callable
    spec: Callable
    inputs: dict[str, Callable[[Sizes], tuple[int, ...]]]
    output: Callable[[Sizes], tuple[int, ...]]
    sizes: Sizes
    blocks: Sizes
    idea: str
    int_inputs: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        return self.kernel.__name__ if hasattr(self.kernel, "__name__") else self.kernel.fn.__name__


def seed_grid(sizes: Sizes, blocks: Sizes) -> tuple[int, int, int]:
    """The seed's launch grid: axis i covers N<i> in blocks of B<i> (1 where there is none)."""
    return tuple(
        math.ceil(sizes[f"N{i}"] / blocks[f"B{i}"]) if f"N{i}" in sizes and f"B{i}" in blocks else 1
        for i in range(3)
    )


@dataclass(frozen=True)
class Result:
    puzzle: Puzzle
    sizes: Sizes
    blocks: Sizes
    ok: bool
    max_abs_err: float
    unwritten: int  # output elements still NaN (the poison) after the launch

    def line(self) -> str:
        status = "ok  " if self.ok else "FAIL"
        shape = " ".join(f"{k}={v}" for k, v in {**self.sizes, **self.blocks}.items())
        return (
            f"{self.puzzle.number:2d} {self.puzzle.name:28s} {status} max|err| {self.max_abs_err:.1e}"
            f"{f'  unwritten {self.unwritten}' if self.unwritten else ''}  {shape}"
        )


def make_inputs(puzzle: Puzzle, sizes: Sizes, seed: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    out = []
    for name, shape in puzzle.inputs.items():
        if name in puzzle.int_inputs:
            out.append(torch.randint(-(2**31), 2**31 - 1, shape(sizes), generator=gen, dtype=torch.int32))
        else:
            out.append(torch.rand(shape(sizes), generator=gen) - 0.5)
    return out


def run(
    puzzle: Puzzle,
    sizes: Sizes | None = None,
    blocks: Sizes | None = None,
    *,
    seed: int = 0,
    device: str | None = None,
) -> Result:
    """Launch `puzzle` at `sizes`/`blocks` (default: the seed's) and check it against its spec."""
    sizes = dict(puzzle.sizes if sizes is None else sizes)
    blocks = dict(puzzle.blocks if blocks is None else blocks)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    inputs = make_inputs(puzzle, sizes, seed)
    z = torch.full(puzzle.output(sizes), float("nan"), device=device)
    with np.errstate(invalid="ignore", over="ignore"):  # the interpreter computes masked-off lanes too
        puzzle.kernel[seed_grid(sizes, blocks)](*(t.to(device) for t in inputs), z, **sizes, **blocks)
    got = z.cpu().double()
    expected = puzzle.spec(*(t if t.dtype == torch.int32 else t.double() for t in inputs))
    unwritten = int(torch.isnan(got).sum())
    max_err = float((got - expected).abs().max()) if got.numel() else 0.0
    ok = got.shape == expected.shape and torch.allclose(got, expected, rtol=RTOL, atol=ATOL)
    return Result(puzzle, sizes, blocks, ok, max_err, unwritten)
