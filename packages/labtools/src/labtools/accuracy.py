"""An implementation's output against its op's float64 reference, as a sweep checks it before
timing: a sample of rows (both ends, and some between), each element within the dtype's
tolerance or within twice the torch op's own error on the same input."""

from __future__ import annotations

import numpy as np

from labtools.ops import tolerance
from labtools.registry import Implementation


def _rows_f64(a, rows: list[int]) -> np.ndarray:
    """Rows of a NumPy, torch or CuPy array, on the host in float64."""
    part = a[rows]
    if hasattr(part, "float"):  # torch: through fp32, as bf16 has no NumPy dtype
        part = part.float().cpu().numpy()
    elif hasattr(part, "get"):  # CuPy
        part = part.get()
    return np.asarray(part, dtype=np.float64)


def _checked(
    impl: Implementation, inputs: tuple, output, rows_each_end: int
) -> tuple[list[int], np.ndarray, np.ndarray]:
    """(rows, got, want): the first and last `rows_each_end` rows (where tail and grid-edge bugs
    show) and as many drawn at random between them, as computed and from the float64 reference."""
    m = output.shape[0]
    k = min(rows_each_end, m)
    middle = range(k, max(k, m - k))
    picked = np.random.default_rng(m).choice(len(middle), size=min(k, len(middle)), replace=False)
    rows = sorted(set(range(k)) | set(range(max(k, m - k), m)) | {middle[i] for i in picked})
    want = impl.op_model.reference(*(_rows_f64(a, rows) for a in inputs))
    return rows, _rows_f64(output, rows), want


def reference_error(impl: Implementation, inputs: tuple, output, rows_each_end: int) -> float:
    """The largest error of `output` against the float64 reference on check_output's rows: the
    torch op's own error, which a point's other implementations may reach twice over. 0 where it
    is not finite (a wrong NaN or infinity widens nothing)."""
    _, got, want = _checked(impl, inputs, output, rows_each_end)
    with np.errstate(invalid="ignore"):
        err = float(np.max(np.abs(got - want)[np.isfinite(want)], initial=0.0))
    return err if np.isfinite(err) else 0.0


def check_output(
    impl: Implementation, inputs: tuple, output, dtype: str, rows_each_end: int, reference_err: float = 0.0
) -> str | None:
    """None when `output` matches the op's float64 reference on `_checked`'s rows, each element
    within the dtype's tolerance or within twice `reference_err` (the torch op's own error on the
    same input: no worse than the op it replaces); otherwise what is wrong."""
    if tuple(output.shape) != tuple(inputs[0].shape):
        return f"output shape {tuple(output.shape)} != input shape {tuple(inputs[0].shape)}"
    rows, got, want = _checked(impl, inputs, output, rows_each_end)
    with np.errstate(invalid="ignore"):
        bad = ~(
            np.isclose(got, want, equal_nan=True, **tolerance(dtype))
            | (np.abs(got - want) <= 2 * reference_err)
        )
    if not bad.any():
        return None
    r, c = np.argwhere(bad)[0]
    return (
        f"wrong result: {int(bad.sum())} of {bad.size} checked elements off the float64 reference "
        f"(first at row {rows[r]}, column {c}: {got[r, c]!r} vs {want[r, c]!r}; {tolerance(dtype)}"
        + (f", or within twice the reference's error {reference_err:.3g})" if reference_err else ")")
    )
