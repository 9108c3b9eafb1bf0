"""Implementations register here; labtools itself imports no kernel package.

A kernel package declares an entry point in the group ``labtools.plugins`` whose object
is a zero-argument function that calls :func:`register` for each implementation it
offers (and :func:`register_check` for each correctness check `lab run` should run)::

    [project.entry-points."labtools.plugins"]
    kernels_cuda = "kernels_cuda.plugin:register"

:func:`implementations` loads every plugin once, then filters. Where packages are used
in place (``PYTHONPATH`` over ``packages/*/src``, no installed metadata),
``scripts/test-in-place`` writes the same entry points into a ``.dist-info`` folder, so
there is still only one discovery path.

What `lab run` reads from plugins (conventions other packages follow):

- ``Implementation.meta["autotune_picks"]``: an optional zero-argument callable that
  returns the configs an autotuner has picked so far in this process, JSON-able::

      [{"key": {"N": 600, "dtype": "float32"},          # the autotune key's values;
        "config": {"BLOCK": 1024, "num_warps": 4, "num_stages": 1}}, ...]

  ``key`` holds at least the row length ``N`` and the storage ``dtype`` (a string);
  ``config`` holds the meta-parameters plus ``num_warps`` and ``num_stages``. `lab run`
  calls it after timing the implementation, writes the list into manifest.json, and
  takes the pick for N=600 float32 as the manifest's ``autotune_picked``. Every bench record
  (``lab bench``, `lab run`'s sweeps) carries ``picks``: the ``card`` and ``source`` of its row
  length's entry (config["source"]: "committed", "rule", "tuned", "given", ...; config["card"]
  if given, else the current GPU's name; labtools.bench.records.picks_used). labtools never
  imports the kernel package: kernels_triton registers
  ``Implementation(..., meta={"autotune_picks": kernels_triton.autotune_picks})``.
- Checks named ``minigpt_torch.port`` and ``minigpt_torch.kernel_swap`` fill the
  manifest's ``torch_port`` block; see :mod:`labtools.manifest` for the keys read.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points

from labtools.ops import Op, get_op

ENTRY_POINT_GROUP = "labtools.plugins"
# Plugins that ship with labtools (the NumPy and torch references), loaded before the
# entry points and the same way: named, not imported here, so registry.py depends on no
# plugin while every plugin depends on registry.py.
BUILTIN_PLUGINS = ("labtools.references:register", "labtools.peers:register")  # peers: when installed


@dataclass(frozen=True)
class Implementation:
    """One way to compute an op.

    fn:        the callable; it takes the op's inputs as tensors (or arrays) on `device`
               and returns the output.
    op:        the op's name in :mod:`labtools.ops` (its reference and cost model).
    name:      unique, dotted: ``"cuda.v3_fused"``, ``"triton.softmax"``, ``"torch.softmax"``.
    backend:   ``"cuda-c"``, ``"triton"``, ``"torch"``, ``"torch.compile"``, ``"numpy"``.
    label:     short name for tables and plots: ``"fused"``, ``"F.softmax"``.
    device:    ``"cuda"`` or ``"cpu"``; also what the inputs must live on.
    dtypes:    storage dtypes it accepts, as strings.
    supports:  optional predicate ``(shape, dtype) -> bool`` for shape limits.
    is_reference: the implementation others are compared against in ratios.
    bytes_moved / flops: override the op's cost model (rarely needed: an implementation
               that re-reads its input still gets credited for the compulsory bytes only).
    meta:      free-form extras; `lab run` reads ``meta["autotune_picks"]`` (see above).
    """

    fn: Callable
    op: str
    name: str
    backend: str
    label: str
    device: str = "cuda"
    dtypes: tuple[str, ...] = ("float32", "float16", "bfloat16")
    supports: Callable[[tuple[int, ...], str], bool] | None = None
    is_reference: bool = False
    bytes_moved: Callable[[tuple[int, ...], int], int] | None = None
    flops: Callable[[tuple[int, ...]], int] | None = None
    notes: str = ""
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def op_model(self) -> Op:
        return get_op(self.op)

    def cost(self, shape: tuple[int, ...], itemsize: int) -> tuple[int, int]:
        """(bytes, flops) for one call at this shape and element size."""
        op = self.op_model
        nbytes = (self.bytes_moved or op.bytes_moved)(shape, itemsize)
        nflops = (self.flops or op.flops)(shape)
        return nbytes, nflops

    def accepts(self, shape: tuple[int, ...], dtype: str) -> bool:
        return dtype in self.dtypes and (self.supports is None or self.supports(shape, dtype))


@dataclass(frozen=True)
class Check:
    """A correctness check that `lab run` executes and records (e.g. "the PyTorch port
    equals the NumPy model"). `fn()` returns a JSON-able dict that includes
    ``"passed": bool``; `needs_cuda` checks are skipped, and reported as skipped, without
    a CUDA device."""

    name: str
    fn: Callable[[], dict]
    needs_cuda: bool = False
    doc: str = ""


_REGISTRY: dict[str, Implementation] = {}
_CHECKS: dict[str, Check] = {}
_plugins_loaded = False


def register(impl: Implementation, *, replace: bool = False) -> Implementation:
    """Add an implementation. Names are unique; re-registering the same name is an error
    unless `replace` (used by plugins that are loaded twice in one process)."""
    get_op(impl.op)  # fail early on an unknown op
    if impl.name in _REGISTRY and not replace:
        raise ValueError(f"implementation {impl.name!r} is already registered")
    _REGISTRY[impl.name] = impl
    return impl


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)
    _CHECKS.pop(name, None)


def register_check(check: Check) -> Check:
    """Add (or replace) a correctness check; plugins call this from their entry point."""
    _CHECKS[check.name] = check
    return check


def checks(*, load: bool = True) -> list[Check]:
    if load:
        load_plugins()
    return list(_CHECKS.values())


def load_plugins(*, force: bool = False) -> list[str]:
    """Call every ``labtools.plugins`` entry point once. Returns the names loaded.

    `force` empties the registry and loads everything again.

    A plugin that fails to import (say CuPy missing on this machine) is skipped with a
    warning, so one broken backend never hides the others.
    """
    global _plugins_loaded
    if _plugins_loaded and not force:
        return []
    if force:
        _REGISTRY.clear()
        _CHECKS.clear()
    _plugins_loaded = True
    for spec in BUILTIN_PLUGINS:  # by name, as entry points are: the registry imports no plugin
        module, _, function = spec.partition(":")
        getattr(importlib.import_module(module), function)()
    loaded = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()()
            loaded.append(ep.name)
        except Exception as exc:  # noqa: BLE001 - report and continue
            warnings.warn(f"labtools plugin {ep.name!r} ({ep.value}) failed to load: {exc}", stacklevel=2)
    return loaded


def implementations(
    op: str | None = None,
    *,
    backend: str | None = None,
    device: str | None = None,
    load: bool = True,
) -> list[Implementation]:
    """Registered implementations, in registration order, filtered by op/backend/device."""
    if load:
        load_plugins()
    return [
        impl
        for impl in _REGISTRY.values()
        if (op is None or impl.op == op)
        and (backend is None or impl.backend == backend)
        and (device is None or impl.device == device)
    ]


def get(name: str) -> Implementation:
    load_plugins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no implementation {name!r}; registered: {sorted(_REGISTRY)}") from None
