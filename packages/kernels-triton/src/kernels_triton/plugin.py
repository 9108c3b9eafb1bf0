"""labtools plugin: the Triton softmax, forward and backward, for `lab` and the benchmarks.

Declared in pyproject as the `labtools.plugins` entry point `kernels_triton.plugin:register`.
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


def _autotuned(x):
    from kernels_triton.autotuned import softmax_autotuned

    return softmax_autotuned(x)


def _log_softmax(x):
    from kernels_triton.log_softmax import log_softmax

    return log_softmax(x, dim=-1)


def _cross_entropy(x):
    """labtools' cross_entropy op: forward and backward of the summed loss, class-0 targets;
    returns the gradient (written during the forward, the backward only scales it)."""
    import torch
    from labtools.references import class_zero_targets

    from kernels_triton.cross_entropy import cross_entropy

    leaf = x.detach().requires_grad_()
    return torch.autograd.grad(cross_entropy(leaf, class_zero_targets(x), reduction="sum"), leaf)[0]


def _picks(kernel: str):
    """The configs this process's launches of one kernel ran with (tuned or committed picks
    or the heuristic's), in labtools' convention ([{"key": ..., "config": ...}], see
    labtools.registry). The key the (512, 600) shape of the manifest's B512 uses comes
    first, so `lab run` reports the config that shape ran."""

    def picks() -> list[dict]:
        import torch

        from kernels_triton.configs import num_sms, rows_per_sm
        from kernels_triton.softmax import autotune_picks

        b512 = rows_per_sm(512, num_sms(torch.cuda.current_device())) if torch.cuda.is_available() else None
        found = [p for p in autotune_picks()["used"] if p["kernel"] == kernel]
        found.sort(key=lambda p: p["rows_per_sm"] != b512)
        return [
            {
                "key": {"N": p["N"], "dtype": p["dtype"], "rows_per_sm": p["rows_per_sm"]},
                "config": {
                    "BLOCK": p["block"],
                    "num_warps": p["num_warps"],
                    "l2_hints": p.get("l2_hints", False),
                    "warp_rows": p.get("warp_rows", False),
                    "source": p["source"],
                },
            }
            for p in found
        ]

    return picks


def _form_config(form: str, n: int):
    """The config that makes the tile kernels take `form` at rows of N (None: the form's own)."""
    from kernels_triton.configs import SoftmaxConfig, next_pow2

    if form == "one_pass":  # the whole row in registers (it may spill past 32768 fp32 values)
        block = max(1024, next_pow2(n))
        return SoftmaxConfig(block, min(32, max(4, block // 1024)))
    if form == "looped":  # tiles of half the row's power of two, at most 8192, with L2 hints
        block = min(8192, max(64, next_pow2(n) // 2))
        return SoftmaxConfig(block, min(32, max(2, block // 256)), l2_hints=block < n)
    if form == "warp_rows":
        return SoftmaxConfig(4 * next_pow2(n), 4, warp_rows=True)
    return None


# name -> (launch.route's form, what the form takes: (shape, dtype) -> bool)
FORMS = {
    "one_pass": ("tiles", lambda shape, dtype: shape[-1] <= 65536),
    "looped": ("tiles", lambda shape, dtype: shape[-1] >= 2),
    "warp_rows": ("tiles", lambda shape, dtype: shape[-1] <= 8 * 512 // {"float32": 4}.get(dtype, 2)),
    "split_row": ("split_row", lambda shape, dtype: 4096 <= shape[-1]),
    "cluster": ("cluster", lambda shape, dtype: 32768 <= shape[-1] <= 262144),
}


def _forced(form: str):
    """(forward, backward) that launch the rows on one form whatever launch.route would pick."""
    route_form = FORMS[form][0]

    def run(name, tensors):
        from kernels_triton import launch

        n = tensors[0].shape[-1]
        m = tensors[0].numel() // n
        rows = [t.reshape(m, n) for t in tensors]
        launch.launch(name, rows, m, n, _form_config(form, n), True, route_form)
        return tensors[-1]

    def forward(x):
        return run("softmax_fwd", [x, x.new_empty(x.shape)])

    def backward(y, dy):
        return run("softmax_bwd", [y, dy, y.new_empty(y.shape)])

    return forward, backward


def register() -> None:
    _register(
        Implementation(
            _autotuned,
            op="softmax",
            name="triton.autotune",
            backend="triton",
            label="Triton autotune",
            device="cuda",
            dtypes=DTYPES,
            notes="the ladder's first rung: one program a row, two passes, BLOCK x num_warps by @triton.autotune",
        ),
        replace=True,
    )
    for form, (_, supports) in FORMS.items():
        forward, backward = _forced(form)
        for fn, op, suffix in ((forward, "softmax", ""), (backward, "softmax_backward", "_backward")):
            _register(
                Implementation(
                    fn,
                    op=op,
                    name=f"triton.{form}{suffix}",
                    backend="triton",
                    label=f"Triton {form.replace('_', ' ')}{' bwd' if suffix else ''}",
                    device="cuda",
                    dtypes=DTYPES,
                    supports=supports,
                    notes=f"kernels_triton's {form} form alone, whatever launch.route would pick",
                ),
                replace=True,
            )
    notes = (
        "batch invariant; launch.route picks the form: cluster (sm_90, 32768-262144), split rows past 32768, "
        "else one pass or looped as the config (tuned, committed or heuristic, one a row length) says; "
        "picks: kernels_triton.autotune_picks()"
    )
    _register(
        Implementation(
            _forward,
            op="softmax",
            name="triton.softmax",
            backend="triton",
            label="Triton",
            device="cuda",
            dtypes=DTYPES,
            notes=notes,
            meta={"autotune_picks": _picks("softmax_fwd")},
        ),
        replace=True,
    )
    _register(
        Implementation(
            _backward,
            op="softmax_backward",
            name="triton.softmax_backward",
            backend="triton",
            label="Triton bwd",
            device="cuda",
            dtypes=DTYPES,
            notes=notes,
            meta={"autotune_picks": _picks("softmax_bwd")},
        ),
        replace=True,
    )
    for fn, op, label, notes in (
        (_log_softmax, "log_softmax", "Triton", "softmax's reduction with a log epilogue (xent_kernels.py)"),
        (
            _cross_entropy,
            "cross_entropy",
            "Triton",
            "loss and gradient in one launch (the row in registers up to 16384 16-bit / 8192 fp32 elements, else "
            "read twice, the second time back to front from L2); the backward scales in place only if dloss != 1",
        ),
    ):
        _register(
            Implementation(fn, op=op, name=f"triton.{op}", backend="triton", label=label, device="cuda",
                           dtypes=DTYPES, notes=notes),
            replace=True,
        )  # fmt: skip
