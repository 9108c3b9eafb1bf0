"""Explain what torch.compile generated.

Tools like depyf and tlparse dump Inductor's output; this package reads it:

- `capture.dump(fn_or_module, *inputs, mode=...)` compiles in a fresh cache and captures
  every module Inductor generated (the wrapper with its C++ or Triton kernels);
- `parse.parse_module(code)` turns one module into structure: each kernel's kind, the
  post-grad FX nodes and ATen ops it fused, its loads and stores with their index
  expressions, its reductions, and the buffers the wrapper's call() allocates;
- `annotation.annotate(kernel)` writes a Markdown walkthrough of one kernel from that;
- `profiling.profile(fn, *inputs)` times eager against compiled through labtools.bench;
- `experiment` and `report` produce experiments/25-compile (`lab inductor experiment`).

labtools imports torch only here (the `labtools[torch]` extra), never from its top level.
"""

from labtools.inductor.annotation import annotate, is_softmax
from labtools.inductor.capture import Dump, dump
from labtools.inductor.graph import CompiledGraph, Kernel
from labtools.inductor.parse import parse_module
from labtools.inductor.profiling import profile
from labtools.inductor.targets import TinyHead, resolve

__all__ = [
    "annotate",
    "is_softmax",
    "Dump",
    "dump",
    "CompiledGraph",
    "Kernel",
    "parse_module",
    "profile",
    "TinyHead",
    "resolve",
]
