"""labtools plugin: the Triton softmax, forward and backward, for `lab` and the benchmarks.

Declared in pyproject as the `labtools.plugins` entry point `kernels_triton.bench:register`.
"""

from labtools.registry import Implementation
from labtools.registry import register as _register

DTYPES = ("float32", "float16", "bfloat16")


def _forward(x):
    from kernels_triton.softmax import softmax

    return softmax(x, dim=-1)


def _backward(y, dy):
    from kernels_triton.softmax import softmax_backward

    return softmax_backward(y, dy, dim=-1)


def register() -> None:
    notes = ("one pass with the row in registers up to 32768 (fp32 forward; 16384 backward), else a looped online "
             "softmax; BLOCK x num_warps autotuned per (N, rows per SM, dtype); picks: kernels_triton.autotune_picks()")
    _register(Implementation(_forward, op="softmax", name="triton.softmax", backend="triton", label="Triton",
                             device="cuda", dtypes=DTYPES, notes=notes), replace=True)
    _register(Implementation(_backward, op="softmax_backward", name="triton.softmax_backward", backend="triton",
                             label="Triton bwd", device="cuda", dtypes=DTYPES, notes=notes), replace=True)
