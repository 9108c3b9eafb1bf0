"""The ops kernel-lab measures: one float64 NumPy reference and one cost model each.

Every kernel package checks itself against `Op.reference` and every benchmark and the
roofline count bytes and FLOPs with `Op.bytes_moved` / `Op.flops`, so a number means
the same thing wherever it is printed.

Cost models count the fewest bytes the op must move through device memory (each input
read once, each output written once) and the arithmetic it must do.

Softmax FLOP convention: 5 FLOPs per element -- one compare for the max, one subtract,
one exp (counted as a single FLOP, although it is several instructions), one add for
the sum and one multiply by the reciprocal. The backward, dx = y * (dy - sum(y * dy)),
is 4 FLOPs per element (multiply, add, subtract, multiply).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Shape = tuple[int, ...]


def _numel(shape: Shape) -> int:
    return math.prod(shape)


# --- float64 NumPy references ------------------------------------------------------


def softmax_ref(x, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax in float64. Rows of all -inf give NaN, like torch."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.max(x, axis=axis, keepdims=True) if x.size else x
        e = np.exp(x - m)
        return e / np.sum(e, axis=axis, keepdims=True)


def softmax_stress_rows(n: int, seed: int = 0) -> np.ndarray:
    """Rows of n float32 values (n >= 3) that a softmax kernel gets wrong if it scales before
    subtracting the max, or rounds max * log2(e) and takes x * log2(e) minus that: the max
    first, last and repeated; a max of about 200; magnitudes of 1e10, 1e30 and 2e38; +-3.3e38
    (past FLT_MAX / log2(e), where max * log2(e) overflows). Every value is finite and
    survives a cast to bf16 or fp32 (fp16 turns the large ones into +-inf)."""
    rng = np.random.default_rng(seed)
    rows = []
    for kind in ("max first", "max last", "max repeated"):
        x = rng.standard_normal(n) * 3
        top = x.max() + 5
        if kind == "max first":
            x[0] = top
        elif kind == "max last":
            x[-1] = top
        else:
            x[[1, n // 2, n - 1]] = top
        rows.append(x)
    rows.append(rng.standard_normal(n) * 3 + 200)
    rows += [rng.standard_normal(n) * scale for scale in (1e10, 1e30)]
    rows.append(np.clip(rng.standard_normal(n) * 2e38, -3.3e38, 3.3e38))
    top = np.zeros(n)
    top[[0, n // 2]], top[n - 1] = 3.3e38, -3.3e38
    rows.append(top)
    return np.stack(rows).astype(np.float32)


def softmax_backward_ref(y, dy, axis: int = -1) -> np.ndarray:
    """Gradient of softmax given its output y and the upstream gradient dy (float64)."""
    y = np.asarray(y, dtype=np.float64)
    dy = np.asarray(dy, dtype=np.float64)
    return y * (dy - np.sum(y * dy, axis=axis, keepdims=True))


def log_softmax_ref(x, axis: int = -1) -> np.ndarray:
    """log_softmax in float64: (x - max) - log(sum(exp(x - max))). Rows of all -inf give NaN."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        m = np.max(x, axis=axis, keepdims=True) if x.size else x
        return (x - m) - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def cross_entropy_grad_ref(x) -> np.ndarray:
    """The gradient of the cross-entropy op's loss: sum over rows of -log softmax(x)[0]
    (every row's target is class 0, so that a row's gradient depends on that row alone and
    any subset of rows can be checked), i.e. softmax(x) - onehot(0), in float64."""
    g = softmax_ref(x)
    g[..., 0] -= 1.0
    return g


def vector_add_ref(a, b) -> np.ndarray:
    return np.asarray(a, dtype=np.float64) + np.asarray(b, dtype=np.float64)


def copy_ref(x) -> np.ndarray:
    return np.array(x, dtype=np.float64, copy=True)


# --- the ops -----------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """What an op computes and what it costs, independent of any implementation.

    `bytes_moved(shape, itemsize)` and `flops(shape)` take the shape of the op's main
    tensor (the (M, N) input of softmax, the length-N vectors of vector_add).
    """

    name: str
    reference: Callable[..., np.ndarray]
    bytes_moved: Callable[[Shape, int], int]
    flops: Callable[[Shape], int]
    n_inputs: int
    doc: str = ""
    cost_note: str = ""  # the counting convention in one line, restated on plots and reports

    def intensity(self, shape: Shape, itemsize: int) -> float:
        """Arithmetic intensity in FLOP per byte of compulsory traffic."""
        return self.flops(shape) / self.bytes_moved(shape, itemsize)


SOFTMAX = Op(
    "softmax",
    softmax_ref,
    bytes_moved=lambda shape, itemsize: 2 * _numel(shape) * itemsize,  # read x, write y
    flops=lambda shape: 5 * _numel(shape),
    n_inputs=1,
    doc="y = softmax(x) along the last axis of an (M, N) tensor",
    cost_note="5 FLOP/element (max-compare, subtract, exp counted as 1, add, multiply); bytes: read x + write y once",
)
SOFTMAX_BACKWARD = Op(
    "softmax_backward",
    softmax_backward_ref,
    bytes_moved=lambda shape, itemsize: 3 * _numel(shape) * itemsize,  # read y, dy; write dx
    flops=lambda shape: 4 * _numel(shape),
    n_inputs=2,
    doc="dx = y * (dy - sum(y * dy)) along the last axis",
    cost_note="4 FLOP/element (multiply, add, subtract, multiply); bytes: read y, dy + write dx once",
)
LOG_SOFTMAX = Op(
    "log_softmax",
    log_softmax_ref,
    bytes_moved=lambda shape, itemsize: 2 * _numel(shape) * itemsize,  # read x, write y
    flops=lambda shape: 5 * _numel(shape),
    n_inputs=1,
    doc="y = log_softmax(x) along the last axis of an (M, N) tensor",
    cost_note="5 FLOP/element (max-compare, subtract, exp counted as 1, add, subtract); bytes: read x + write y once",
)
CROSS_ENTROPY = Op(
    "cross_entropy",
    cross_entropy_grad_ref,
    # The floor: the logits read once and their gradient written once; the targets, the loss
    # and any per-row statistics are O(M) and not counted.
    bytes_moved=lambda shape, itemsize: 2 * _numel(shape) * itemsize,
    flops=lambda shape: 8 * _numel(shape),
    n_inputs=1,
    doc="forward + backward of the summed cross-entropy of (M, V) logits, targets class 0; output: the gradient",
    cost_note="8 FLOP/element (softmax's 5, the gradient's subtract, scale, and the loss); bytes: read logits + "
    "write gradient once",
)
VECTOR_ADD = Op(
    "vector_add",
    vector_add_ref,
    bytes_moved=lambda shape, itemsize: 3 * _numel(shape) * itemsize,  # read a, b; write c
    flops=lambda shape: _numel(shape),
    n_inputs=2,
    doc="c = a + b",
)
COPY = Op(
    "copy",
    copy_ref,
    bytes_moved=lambda shape, itemsize: 2 * _numel(shape) * itemsize,  # read x, write y
    flops=lambda shape: 0,
    n_inputs=1,
    doc="y = x: the bandwidth ceiling every memory-bound kernel is measured against",
)

OPS: dict[str, Op] = {
    op.name: op for op in (SOFTMAX, SOFTMAX_BACKWARD, LOG_SOFTMAX, CROSS_ENTROPY, VECTOR_ADD, COPY)
}


def get_op(name: str) -> Op:
    try:
        return OPS[name]
    except KeyError:
        raise ValueError(f"unknown op {name!r}; known: {sorted(OPS)}") from None


# Tolerances for comparing a kernel's output with the float64 reference, per storage
# dtype, stated once for every test in the repository. fp32 arithmetic with a different
# reduction order lands near 1e-6 relative; half-precision outputs are limited by their
# own rounding (2^-11 for fp16, 2^-8 for bf16 relative to the value).
TOLERANCES: dict[str, dict[str, float]] = {
    "float64": {"rtol": 1e-12, "atol": 1e-14},
    "float32": {"rtol": 1e-5, "atol": 1e-6},
    "float16": {"rtol": 2e-3, "atol": 1e-5},
    "bfloat16": {"rtol": 1.6e-2, "atol": 1e-4},
}


def tolerance(dtype) -> dict[str, float]:
    """rtol/atol for a dtype given as a string, NumPy dtype or torch dtype."""
    name = str(dtype).replace("torch.", "")
    try:
        return TOLERANCES[name]
    except KeyError:
        raise ValueError(f"no tolerance stated for dtype {dtype!r}") from None
