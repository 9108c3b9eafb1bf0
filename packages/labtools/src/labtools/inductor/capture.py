"""Compile with torch.compile and capture what Inductor generated.

The hook is Inductor's own `output_code` logging artifact (what `TORCH_LOGS=output_code`
prints): every compiled graph's module goes through the logger
`torch._inductor.<module>.__output_code` as one DEBUG record, "Output code: \\n<module>".
`capture()` attaches a handler to that logger (and to `__post_grad_graphs`, whose node
names split C++ kernel names) for the duration of a compile, with propagation off so
nothing reaches stderr, and restores the loggers afterwards. The loggers are found by
their suffix, so it does not matter which Inductor module owns them (codecache in
torch 2.11 and 2.15).

Caches would hide the compile (a cached graph or kernel skips code generation or the
C++ compiler, and the compile time means nothing), so every dump and every timed compile
runs inside `fresh_cache()`: empty on-disk caches, cleared in-memory ones, dynamo reset.

`dump` compiles with `dynamic=False` (one static shape, the one given) under
`torch.no_grad()` (the inference graph, no saved activations) and with Inductor's
`descriptive_names = "inductor_node"`, which names each kernel after the post-grad FX
nodes it fuses (`cpp_fused_amax_exp_sub_sum_1_div_0` instead of `cpp_fused__softmax_0`).
The generated code is otherwise the same.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from labtools.atomic import atomic_write_text
from labtools.inductor.annotation import annotate_all
from labtools.inductor.graph import CompiledGraph
from labtools.inductor.parse import parse_module

_ARTIFACTS = ("__output_code", "__post_grad_graphs")
KERNEL_NAMING = {"triton.descriptive_names": "inductor_node", "cpp.descriptive_names": "inductor_node"}


class _Collector(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.modules: list[str] = []
        self.graphs: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if record.name.endswith("__output_code") and msg.startswith("Output code:"):
            self.modules.append(msg.split("\n", 1)[1] if "\n" in msg else "")
        elif record.name.endswith("__post_grad_graphs") and "AFTER POST GRAD" in msg:
            self.graphs.append(msg)


def _artifact_loggers() -> list[logging.Logger]:
    import torch._inductor.codecache  # noqa: F401 - both create their artifact loggers on import
    import torch._inductor.compile_fx  # noqa: F401

    names = [
        n for n in logging.Logger.manager.loggerDict if n.startswith("torch.") and n.endswith(_ARTIFACTS)
    ]
    return [logging.getLogger(n) for n in names]


@contextlib.contextmanager
def capture() -> Iterator[_Collector]:
    """Collect Inductor's output modules and post-grad graphs while the block runs."""
    collector = _Collector()
    saved = []
    for log in _artifact_loggers():
        saved.append((log, log.level, log.propagate))
        log.addHandler(collector)
        log.setLevel(logging.DEBUG)
        log.propagate = False
    try:
        yield collector
    finally:
        for log, level, propagate in saved:
            log.removeHandler(collector)
            log.setLevel(level)
            log.propagate = propagate


@contextlib.contextmanager
def fresh_cache() -> Iterator[None]:
    """A first compile, whatever ran before: Inductor's own `fresh_cache` (an empty
    temporary TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR, its in-memory code caches
    cleared), the FX-graph and autotune caches kept from writing, and dynamo reset."""
    import torch._dynamo
    import torch._inductor.config as inductor_config
    from torch._inductor import utils

    fresh = getattr(utils, "fresh_cache", None) or utils.fresh_inductor_cache  # renamed in torch 2.8
    off = {k: False for k in ("fx_graph_cache", "autotune_local_cache") if hasattr(inductor_config, k)}
    torch._dynamo.reset()
    try:
        with fresh(), inductor_config.patch(off):
            yield
    finally:
        torch._dynamo.reset()


def leaves(out: Any) -> list[torch.Tensor]:
    """The tensors in a (nested) tuple / list / dict output."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in leaves(o)]
    return []


def max_abs_diff(a: Any, b: Any) -> float:
    la, lb = leaves(a), leaves(b)
    if len(la) != len(lb) or not la:
        raise ValueError(f"outputs differ in structure: {len(la)} vs {len(lb)} tensors")
    return max(
        float((x.detach().double() - y.detach().double()).abs().max()) if x.numel() else 0.0
        for x, y in zip(la, lb)
    )


def versions() -> dict[str, str | None]:
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    return {"torch": torch.__version__, "triton": triton_version}


@dataclass
class Dump:
    """What one torch.compile of one function produced."""

    device: str
    mode: str
    modules: list[str]  # each compiled graph's output module, in compile order
    post_grad_graphs: list[str]
    eager: Any = field(repr=False)
    compiled_output: Any = field(repr=False)
    versions: dict[str, str | None] = field(default_factory=versions)

    @property
    def max_abs_error(self) -> float:
        """max |compiled - eager| over every output element."""
        return max_abs_diff(self.compiled_output, self.eager)

    def graphs(self) -> list[CompiledGraph]:
        return read_graphs(self.modules, self.post_grad_graphs)

    def write(self, out: str | os.PathLike) -> list[Path]:
        """Write the dump to `out`: each module (output_code_<i>.py) and post-grad graph
        (post_grad_<i>.txt) as captured, each kernel's source (kernels/<name>.cpp|.py),
        the parse (parse.json) and the walkthrough of every kernel (ANNOTATION.md)."""
        out = Path(out)
        (out / "kernels").mkdir(parents=True, exist_ok=True)
        written = []
        for i, text in enumerate(self.modules):
            written.append(out / f"output_code_{i}.py")
            atomic_write_text(written[-1], text)
        for i, text in enumerate(self.post_grad_graphs):
            written.append(out / f"post_grad_{i}.txt")
            atomic_write_text(written[-1], text)
        graphs = self.graphs()
        for g in graphs:
            for k in g.kernels:
                written.append(out / "kernels" / f"{k.name}.{'py' if k.language == 'triton' else 'cpp'}")
                atomic_write_text(written[-1], k.source)
        error = (
            self.max_abs_error if self.eager is not None else None
        )  # None: the code was generated, not run
        meta = {"device": self.device, "mode": self.mode, "versions": self.versions, "max_abs_error": error}
        written.append(out / "parse.json")
        atomic_write_text(
            written[-1], json.dumps({**meta, "graphs": [g.to_dict() for g in graphs]}, indent=1) + "\n"
        )
        written.append(out / "ANNOTATION.md")
        atomic_write_text(
            written[-1],
            annotate_all(graphs, f"{self.device}, mode {self.mode!r}, torch {self.versions['torch']}"),
        )
        return written


def read_graphs(modules: list[str], post_grad_graphs: list[str]) -> list[CompiledGraph]:
    """Parse captured modules; node names are unique within a graph, and all the graphs'
    names together are enough to split every kernel name."""
    text = "\n".join(post_grad_graphs)
    return [parse_module(m, text) for m in modules]


def read_dump_dir(path: str | os.PathLike) -> list[CompiledGraph]:
    """The graphs of a folder `Dump.write` wrote, parsed again from the captured text."""
    path = Path(path)
    modules = [p.read_text() for p in sorted(path.glob("output_code_*.py"), key=_index)]
    if not modules:
        raise ValueError(f"{path} holds no output_code_*.py: not a folder `lab inductor dump` wrote")
    graphs = [p.read_text() for p in sorted(path.glob("post_grad_*.txt"), key=_index)]
    return read_graphs(modules, graphs)


def _index(p: Path) -> int:
    return int(p.stem.rsplit("_", 1)[1])


def _device_of(inputs: tuple) -> str:
    devices = {t.device.type for t in leaves(list(inputs))}
    if len(devices) > 1:
        raise ValueError(f"example inputs live on several devices: {sorted(devices)}")
    return devices.pop() if devices else "cpu"


def dump(fn_or_module: Callable, *example_inputs: Any, mode: str = "default") -> Dump:
    """torch.compile `fn_or_module` (mode "default", "max-autotune", ...), run it once on
    `example_inputs` in a fresh cache, and return every module Inductor generated."""
    if not callable(fn_or_module):
        raise TypeError(f"dump needs a function or an nn.Module, got {type(fn_or_module).__name__}")
    import torch._inductor.config as inductor_config

    device = _device_of(example_inputs)
    with torch.no_grad():
        eager = fn_or_module(*example_inputs)
        with fresh_cache(), inductor_config.patch(KERNEL_NAMING), capture() as got:
            compiled = torch.compile(fn_or_module, mode=mode, dynamic=False)
            out = compiled(*example_inputs)
            if device == "cuda":
                torch.cuda.synchronize()
    if not got.modules:
        raise RuntimeError("torch.compile produced no Inductor output code: was the function traced at all?")
    return Dump(device, mode, got.modules, got.graphs, eager, out)
