"""Peers: softmax and cross-entropy kernels of other projects, registered as reference implementations
when their package is installed, so `lab bench` and `lab run` time them on the same
inputs, tables and plots as ours. Neither is a dependency; absent, each is reported as
"not installed" in one line.

- QuACK (distribution ``quack-kernels``, CuTe DSL): ``quack.softmax(x)`` forward (what a
  user calls; an autograd Function over ``quack.softmax.softmax_fwd``) and
  ``quack.softmax.softmax_bwd(dy, y)`` backward. 2-D inputs in fp32, fp16 or bf16; every
  thread copies 16-byte vectors, so N must be a multiple of 16 / itemsize (4 in fp32, 8 in
  16-bit types): other N fail an assertion in its copy layout.
- Liger (distribution ``liger-kernel``, Triton): ``liger_kernel.ops.LigerSoftmaxFunction``
  forward (the function ``liger_kernel.transformers.functional.liger_softmax`` calls) and
  its backward kernel launcher ``liger_kernel.ops.softmax._softmax_backward`` (private:
  Liger exposes the backward only through autograd). One Triton block spans a row, and
  ``calculate_settings`` refuses blocks above 65536 elements, so N <= 65536.

The known limits are `supports` predicates (a sweep lists those shapes as skipped, with
the limit); any other exception a peer raises at a shape is recorded by the sweep as
unsupported at that shape (``meta["peer"]``), never as a crash of the run. Each peer's
package is imported on its first call, not at registration.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from labtools.registry import Implementation
from labtools.registry import register as _register_impl

DTYPES = ("float32", "float16", "bfloat16")
LIGER_MAX_N = 65536  # liger_kernel.ops.utils.calculate_settings: MAX_FUSED_SIZE


def _itemsize(dtype: str) -> int:
    return 4 if dtype == "float32" else 2


def quack_supports(shape: tuple[int, ...], dtype: str) -> bool:
    return len(shape) == 2 and shape[-1] % (16 // _itemsize(dtype)) == 0


def liger_supports(shape: tuple[int, ...], dtype: str) -> bool:
    return shape[-1] <= LIGER_MAX_N


def _module(name: str):
    return importlib.import_module(name)


def _quack_forward(x):
    return _module("quack").softmax(x)


def _quack_backward(y, dy):
    return _module("quack.softmax").softmax_bwd(dy, y)


def _liger_forward(x):
    return _module("liger_kernel.ops").LigerSoftmaxFunction.apply(x)


def _liger_backward(y, dy):
    block, num_warps = _module("liger_kernel.ops.utils").calculate_settings(y.shape[-1])
    return _module("liger_kernel.ops.softmax")._softmax_backward(dy, y, block, num_warps, False)


def _liger_cross_entropy(x):
    """Liger writes the gradient over its input during the forward (its only mode), so it runs
    on a copy here, whose time is included: the sweep checks the result against the logits it
    passed. bench_cross_entropy.py times Liger on the logits themselves."""
    import torch

    from labtools.references import class_zero_targets

    leaf = x.clone().requires_grad_()
    fn = _module("liger_kernel.transformers.functional").liger_cross_entropy
    return torch.autograd.grad(fn(leaf, class_zero_targets(x), reduction="sum"), leaf)[0]


def _quack_cross_entropy(x):
    import torch

    from labtools.references import class_zero_targets

    leaf = x.detach().requires_grad_()
    loss = _module("quack.cross_entropy").cross_entropy(leaf, class_zero_targets(x), reduction="sum")
    return torch.autograd.grad(loss, leaf)[0]


# The cross_entropy op (forward + backward, labtools.ops.CROSS_ENTROPY) of each peer:
# (label, distribution, function, supports, limits, backend).
CROSS_ENTROPY_PEERS = (
    (
        "QuACK",
        "quack-kernels",
        _quack_cross_entropy,
        quack_supports,
        "needs V % (16 / itemsize) == 0",
        "quack",
    ),
    ("Liger", "liger-kernel", _liger_cross_entropy, None, "overwrites its input: timed with a copy", "liger"),
)


@dataclass(frozen=True)
class Peer:
    label: str
    distribution: str
    forward: Callable
    backward: Callable
    supports: Callable[[tuple[int, ...], str], bool]
    limits: str  # what `supports` requires, in words
    backend: str


PEERS: tuple[Peer, ...] = (
    Peer(
        "QuACK",
        "quack-kernels",
        _quack_forward,
        _quack_backward,
        quack_supports,
        "needs N % (16 / itemsize) == 0: N % 4 in fp32, N % 8 in fp16/bf16",
        "quack",
    ),
    Peer(
        "Liger",
        "liger-kernel",
        _liger_forward,
        _liger_backward,
        liger_supports,
        f"needs N <= {LIGER_MAX_N} (one Triton block per row)",
        "liger",
    ),
)


def installed_version(distribution: str) -> str | None:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def status(peers: tuple[Peer, ...] = PEERS) -> dict[str, str]:
    """label -> "<distribution> <version>" or "not installed (pip install <distribution>)"."""
    out = {}
    for p in peers:
        v = installed_version(p.distribution)
        out[p.label] = f"{p.distribution} {v}" if v else f"not installed (pip install {p.distribution})"
    return out


def status_line(peers: tuple[Peer, ...] = PEERS) -> str:
    """One line for tables and logs: "peers: QuACK quack-kernels 0.6.5; Liger not installed (...)"."""
    return "peers: " + "; ".join(f"{label} {s}" for label, s in status(peers).items())


def implementations(peer: Peer, device: str = "cuda") -> list[Implementation]:
    """The forward and backward of `peer` as registry implementations (not registered)."""
    meta = {"peer": peer.distribution, "limits": peer.limits}
    slug = peer.label.lower()
    return [
        Implementation(
            fn,
            op,
            f"{slug}.{op}",
            peer.backend,
            peer.label + suffix,
            device=device,
            dtypes=DTYPES,
            supports=peer.supports,
            notes=f"peer: {peer.distribution}; {peer.limits}",
            meta=dict(meta),
        )
        for fn, op, suffix in ((peer.forward, "softmax", ""), (peer.backward, "softmax_backward", " bwd"))
    ]


def register(device: str = "cuda", peers: tuple[Peer, ...] = PEERS) -> list[str]:
    """Register every installed peer's implementations; returns the names registered.
    Both peers run on CUDA only, hence the default device."""
    names = []
    for peer in peers:
        if installed_version(peer.distribution) is None:
            continue
        for impl in implementations(peer, device):
            _register_impl(impl, replace=True)
            names.append(impl.name)
    for label, distribution, fn, supports, limits, backend in CROSS_ENTROPY_PEERS:
        if installed_version(distribution) is None or distribution not in {p.distribution for p in peers}:
            continue
        impl = Implementation(
            fn, "cross_entropy", f"{label.lower()}.cross_entropy", backend, label, device=device, dtypes=DTYPES,
            supports=supports, notes=f"peer: {distribution}; {limits}", meta={"peer": distribution, "limits": limits},
        )  # fmt: skip
        _register_impl(impl, replace=True)
        names.append(impl.name)
    return names
