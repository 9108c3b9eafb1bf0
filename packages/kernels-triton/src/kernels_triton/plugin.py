"""labtools plugin (the `labtools.plugins` entry point): the Triton softmax (the public op, each form alone,
the autotuned first rung), log_softmax and the fused cross-entropy."""

import functools
import importlib

from labtools.registry import Implementation
from labtools.registry import register as _register

DTYPES = ("float32", "float16", "bfloat16")


def _lazy(module: str, name: str, *args):
    """kernels_triton.<module>.<name>(*tensors, *args), imported at its first call (registering
    imports no Triton) and kept: import_module on every call is host time `lab bench` would count."""
    load = functools.cache(lambda: getattr(importlib.import_module(f"kernels_triton.{module}"), name))
    return lambda *tensors: load()(*tensors, *args)


_forward, _backward = _lazy("softmax", "softmax", -1), _lazy("softmax", "softmax_backward", -1)
_autotuned, _log_softmax = _lazy("autotuned", "softmax_autotuned"), _lazy("log_softmax", "log_softmax", -1)


def _cross_entropy(x):
    """labtools' cross_entropy op: forward and backward of the summed loss, class-0 targets;
    returns the gradient (written during the forward, the backward only scales it)."""
    import torch
    from labtools.references import class_zero_targets

    from kernels_triton.cross_entropy import cross_entropy

    leaf = x.detach().requires_grad_()
    return torch.autograd.grad(cross_entropy(leaf, class_zero_targets(x), reduction="sum"), leaf)[0]


def _picks(kernel: str):
    """The configs this process's launches of one kernel ran with, in labtools.registry's convention."""
    return lambda: [
        {"key": {"N": p["N"], "dtype": p["dtype"]},
         "config": {"BLOCK": p["block"], "num_warps": p["num_warps"], "l2_hints": p.get("l2_hints", False),
                    "warp_rows": p.get("warp_rows", False), "source": p["source"]}}
        for p in importlib.import_module("kernels_triton.softmax").autotune_picks()["used"] if p["kernel"] == kernel
    ]  # fmt: skip


def _form_config(form: str, n: int):
    """The config that makes the tile kernels take `form` at rows of N (None: the cluster's own)."""
    from kernels_triton.configs import SoftmaxConfig, next_pow2

    if form == "one_pass":  # the whole row in registers (it may spill past 32768 fp32 values)
        block = max(1024, next_pow2(n))
        return SoftmaxConfig(block, min(32, max(4, block // 1024)))
    if form == "looped":  # tiles of half the row's power of two, at most 8192, with L2 hints
        block = min(8192, max(64, next_pow2(n) // 2))
        return SoftmaxConfig(block, min(32, max(2, block // 256)), l2_hints=block < n)
    return SoftmaxConfig(4 * next_pow2(n), 4, warp_rows=True) if form == "warp_rows" else None


FORMS = {  # name -> (launch.route's form, what the form takes: (shape, dtype) -> bool)
    "one_pass": ("tiles", lambda shape, dtype: shape[-1] <= 65536),
    "looped": ("tiles", lambda shape, dtype: shape[-1] >= 2),
    "warp_rows": ("tiles", lambda shape, dtype: shape[-1] <= 8 * 512 // {"float32": 4}.get(dtype, 2)),
    "cluster": ("cluster", lambda shape, dtype: 32768 <= shape[-1] <= 262144),
}


def _forced(form: str):
    def run(name, tensors):
        from kernels_triton import launch

        n = tensors[0].shape[-1]
        m = tensors[0].numel() // n
        launch.launch(name, [t.reshape(m, n) for t in tensors], m, n, _form_config(form, n), FORMS[form][0])
        return tensors[-1]

    return (lambda x: run("softmax_fwd", [x, x.new_empty(x.shape)]),
            lambda y, dy: run("softmax_bwd", [y, dy, y.new_empty(y.shape)]))  # fmt: skip


def _add(fn, op: str, name: str, label: str, notes: str, **extra) -> None:
    _register(Implementation(fn, op=op, name=name, backend="triton", label=label, device="cuda",
                             dtypes=DTYPES, notes=notes, **extra), replace=True)  # fmt: skip


def register() -> None:
    _add(_autotuned, "softmax", "triton.autotune", "Triton autotune",
         "the ladder's first rung: one program a row, two passes, BLOCK x num_warps by @triton.autotune")  # fmt: skip
    for form, (_, supports) in FORMS.items():
        for fn, op, suffix in zip(_forced(form), ("softmax", "softmax_backward"), ("", "_backward")):
            label = f"Triton {form.replace('_', ' ')}{' bwd' if suffix else ''}"
            notes = f"kernels_triton's {form} form alone, whatever launch.route would pick"
            _add(fn, op, f"triton.{form}{suffix}", label, notes, supports=supports)
    notes = "batch invariant; launch.route picks the form, configs.choose the config: kernels_triton.autotune_picks()"
    _add(_forward, "softmax", "triton.softmax", "Triton", notes, meta={"autotune_picks": _picks("softmax_fwd")})  # fmt: skip
    _add(_backward, "softmax_backward", "triton.softmax_backward", "Triton bwd", notes,
         meta={"autotune_picks": _picks("softmax_bwd")})  # fmt: skip
    _add(_log_softmax, "log_softmax", "triton.log_softmax", "Triton",
         "softmax's reduction with a log epilogue (xent_kernels.py)")  # fmt: skip
    _add(_cross_entropy, "cross_entropy", "triton.cross_entropy", "Triton",
         "loss and gradient in one launch (the row in registers up to 16384 16-bit / 8192 fp32 elements, past "
         "that over a thread-block cluster on sm_90, else read twice); the backward scales only if dloss != 1")  # fmt: skip
