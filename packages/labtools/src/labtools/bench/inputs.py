"""The inputs a timing rotates through: fresh random tensors, enough copies that none is
still in L2 when its turn comes round again."""

from __future__ import annotations

import math

import numpy as np

from labtools.ops import softmax_ref
from labtools.registry import Implementation


def l2_bytes() -> int:
    """L2 size of the current CUDA device (0 without one)."""
    try:
        import torch

        if torch.cuda.is_available():
            return int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 * 2**20))
    except ImportError:
        pass
    return 0


def n_input_sets(bytes_per_call: int, l2: int, cap: int = 16) -> int:
    """How many copies of the inputs to rotate through so that no copy is still in L2
    when it comes round again: enough to cover twice the L2 (1 when one call already
    moves more than that)."""
    if l2 <= 0 or bytes_per_call <= 0:
        return 1
    return max(1, min(cap, math.ceil(2 * l2 / bytes_per_call)))


def make_inputs(impl: Implementation, shape: tuple[int, ...], dtype: str, seed: int = 0) -> tuple:
    """Fresh standard-normal inputs for `impl` (torch tensors, or NumPy for numpy impls).

    softmax_backward's first input is y, a softmax output: its rows are made
    distributions (softmax of normals), as they are in a real backward pass, so sums
    like sum(y * dy) stay in the range the tolerances are stated for.
    """
    n = impl.op_model.n_inputs
    as_probs = impl.op == "softmax_backward"
    if impl.backend == "numpy":
        rng = np.random.default_rng(seed)
        xs = [rng.standard_normal(shape) for _ in range(n)]
        if as_probs:
            xs[0] = softmax_ref(xs[0])
        return tuple(x.astype(dtype) for x in xs)
    import torch

    g = torch.Generator(device=impl.device).manual_seed(seed)
    xs = [torch.randn(shape, generator=g, device=impl.device, dtype=torch.float32) for _ in range(n)]
    if as_probs:
        xs[0] = torch.softmax(xs[0], dim=-1)
    return tuple(x.to(getattr(torch, dtype)) for x in xs)


def itemsize(dtype: str) -> int:
    return {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}[dtype]


def input_sets(impl: Implementation, shape: tuple[int, ...], dtype: str, seed: int) -> list[tuple]:
    """The copies of `impl`'s inputs a timing rotates through (`n_input_sets`)."""
    if not impl.accepts(shape, dtype):
        raise ValueError(f"{impl.name} does not accept shape {shape} in {dtype}")
    nbytes, _ = impl.cost(shape, itemsize(dtype))
    sets = n_input_sets(nbytes, l2_bytes()) if impl.device == "cuda" else 1
    return [make_inputs(impl, shape, dtype, seed=seed + k) for k in range(sets)]
