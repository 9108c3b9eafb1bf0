"""kernels_cuda's entry in labtools' registry (entry point `labtools.plugins`: kernels_cuda.plugin:register).

Each softmax variant is registered with the shapes it is designed for, so a sweep (`lab bench
softmax`) times v1 only up to 64 Mi elements and v4 only on long rows; `cuda.auto` takes every shape.
Each `fn` takes a torch CUDA tensor (M, N) and returns its softmax along the last dim.
"""

from __future__ import annotations

import math

from labtools.registry import Check, Implementation, register_check
from labtools.registry import register as add

from kernels_cuda import picks, softmax_variants
from kernels_cuda.vecadd import vector_add

HALF = ("float32", "float16", "bfloat16")


def _softmax(variant: str):
    def fn(x):
        return softmax_variants.softmax(x, dim=-1, variant=variant)

    fn.__name__ = f"softmax_{variant}"
    return fn


def _softmax_backward(y, dy):
    from kernels_cuda.backward_call import softmax_backward

    return softmax_backward(y, dy, dim=-1)


def _fits_v3(shape, dtype) -> bool:
    n = shape[-1]
    return n <= softmax_variants.fused_capacity(
        softmax_variants.pack_width(dtype, n, (0,), (n,))
    )  # a fresh contiguous tensor


# (variant, registry name, label, designed range, note), one per softmax variant
REGISTRATIONS = (
    (
        "v1",
        "cuda.v1_naive",
        "naive",
        lambda shape, dtype: math.prod(shape) <= 1 << 26,
        "one thread per row, three passes; any N, timed up to 64 Mi elements (a row is one thread's serial loop)",
    ),
    ("v2", "cuda.v2_shared", "shared mem", None, "one block per row, shared-memory tree reductions"),
    ("v3", "cuda.v3_fused", "fused", _fits_v3, "row in registers, one read + one write, 16-byte accesses"),
    (
        "v4",
        "cuda.v4_cluster",
        "cluster",
        lambda shape, dtype: shape[-1] >= 8192,
        "long rows over a thread-block cluster with DSMEM (sm_90); online two-pass without clusters",
    ),
    (
        "v4_online",
        "cuda.v4_online",
        "online",
        lambda shape, dtype: shape[-1] >= 8192,
        "two passes over DRAM with a running (max, sum): any row length, any GPU",
    ),
    ("auto", "cuda.auto", "CUDA auto", None, "v3 or v4 by row length, dtype and compute capability"),
)


def check_softmax() -> dict:
    """Every variant against the float64 reference at a few shapes, outputs poisoned with NaN."""
    import numpy as np
    import torch
    from labtools.ops import softmax_ref, tolerance

    from kernels_cuda import arrays

    results = []
    shapes = [(7, 600), (33, 1000), (4, 8192 + 8), (3, 40000)]
    for variant, name, *_ in REGISTRATIONS:
        for shape in shapes:
            if variant == "v1" and shape[-1] > 1024 or variant == "v3" and not _fits_v3(shape, "float32"):
                continue
            for dtype in HALF:
                x = torch.randn(shape, device="cuda").to(getattr(torch, dtype)) * 3
                with arrays.poison_outputs():
                    y = softmax_variants.softmax(x, variant=variant)
                got, ref = y.double().cpu().numpy(), softmax_ref(x.double().cpu().numpy())
                ok = bool(np.allclose(got, ref, **tolerance(dtype)))
                results.append(
                    {
                        "impl": name,
                        "shape": list(shape),
                        "dtype": dtype,
                        "passed": ok,
                        "max_abs_err": float(np.nanmax(np.abs(got - ref))),
                    }
                )
    return {"passed": all(r["passed"] for r in results), "cases": results}


def _log_softmax(x):
    from kernels_cuda.log_softmax_op import log_softmax

    return log_softmax(x, dim=-1)


def _cross_entropy(x):
    """labtools' cross_entropy op: forward and backward of the summed loss, class-0 targets
    (labtools.references.class_zero_targets); returns the gradient (written by the forward)."""
    import torch
    from labtools.references import class_zero_targets

    from kernels_cuda.cross_entropy_op import cross_entropy

    leaf = x.detach().requires_grad_()
    return torch.autograd.grad(cross_entropy(leaf, class_zero_targets(x), reduction="sum"), leaf)[0]


# (op, registry name, fn, label, note) for the ops of issue 45; each registered only where
# labtools' op table has the op (labtools.ops.OPS), so this plugin loads with or without them.
FAMILY = (
    ("log_softmax", "cuda.log_softmax", _log_softmax, "CUDA log_softmax", "10: a block a row, one read"),
    ("cross_entropy", "cuda.cross_entropy", _cross_entropy, "CUDA xent", "09, 11: one read"),
)


def register() -> None:
    from labtools.ops import OPS

    for op, name, fn, label, notes in FAMILY:
        if op in OPS:
            add(Implementation(fn, op=op, name=name, backend="cuda-c", label=label, device="cuda",
                               dtypes=HALF, notes=notes), replace=True)  # fmt: skip
    for variant, name, label, supports, notes in REGISTRATIONS:
        add(
            Implementation(
                _softmax(variant),
                op="softmax",
                name=name,
                backend="cuda-c",
                label=label,
                device="cuda",
                dtypes=HALF,
                supports=supports,
                notes=notes,
                meta={"autotune_picks": lambda: picks.used("forward")} if variant == "auto" else {},
            ),
            replace=True,
        )
    add(
        Implementation(
            _softmax_backward,
            op="softmax_backward",
            name="cuda.softmax_backward",
            backend="cuda-c",
            label="CUDA bwd",
            device="cuda",
            dtypes=HALF,
            notes="fused: rows in registers; long rows over a cluster (sm_90); else two passes",
            meta={"autotune_picks": lambda: picks.used("backward")},
        ),
        replace=True,
    )
    add(
        Implementation(
            vector_add,
            op="vector_add",
            name="cuda.vector_add",
            backend="cuda-c",
            label="vector add",
            device="cuda",
            dtypes=HALF,
        ),
        replace=True,
    )
    register_check(
        Check(
            "cuda.softmax.correctness",
            check_softmax,
            needs_cuda=True,
            doc="kernels_cuda softmax v1..v4 and auto vs the float64 reference, NaN-poisoned outputs",
        )
    )
