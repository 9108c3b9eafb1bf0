"""Shared by the labtools.inductor tests: where the committed Inductor dumps are, and
checks on a dump's softmax kernel and on what its annotation quotes and names."""

from __future__ import annotations

import re
from pathlib import Path

from labtools.inductor.annotation import is_softmax

DATA = Path(__file__).parent / "data" / "inductor"
# The TinyHead dumps of experiment 25 are the parser's samples too: one copy, in the experiment.
EXPERIMENT = Path(__file__).parents[2] / "experiments" / "25-compile"
CPU_SAMPLE = EXPERIMENT / "cpu" / "tinyhead"
CUDA_SAMPLE = EXPERIMENT / "cuda" / "tinyhead"


def _only_softmax(graphs):
    found = [(k, g) for g in graphs for k in g.kernels if is_softmax(k)]
    assert len(found) == 1, [k.name for g in graphs for k in g.kernels]
    return found[0]


def _cited_lines_match_source(kernel, text: str) -> None:
    """Every `line N: `code`` the annotation quotes is that line of the kernel's source."""
    src = kernel.source.splitlines()
    cited = re.findall(r"line (\d+): `([^`]+)`", text)
    assert cited
    for n, code in cited:
        assert src[int(n) - 1].strip() == code, (n, code)


def _names_every_softmax_op(kernel, text):
    """The annotation names each fused op by its ATen (or prims) target. On CUDA, torch 2.11
    fuses the max and the sum as one prims.prepare_softmax_online node."""
    online = "prepare_softmax_online" in kernel.fused_ops
    for op in ["sub", "exp", "div", *(["prepare_softmax_online"] if online else ["amax", "sum"])]:
        assert re.search(rf"`(aten|prims)\.{op}\b", text), op
