"""Many profiled cases in one process: the target `lab ncu --impl` runs under ncu, and the
split of its profiles back into cases.

`python -m labtools.ncu_cases launch NAMES SHAPES DTYPES`: for every case (each registered
implementation at each MxN and dtype it accepts; the lists are comma-separated) it warms the
implementation up (compile, autotune) with the profiler off, then runs it once between
cudaProfilerStart/Stop (ncu runs with --profile-from-start off), after a marker kernel
(torch's spin kernel) that `label_cases` splits the profiles at: one process and one ncu
session for many cases, each profile named by its case.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from labtools.ncu_metrics import KernelProfile


def launch_target(impl_names: str, shapes: str, dtypes: str) -> list[str]:
    """The command that runs each case of registered implementations x shapes x dtypes
    (comma-separated lists) once under the profiler."""
    return [sys.executable, "-m", "labtools.ncu_cases", "launch", impl_names, shapes, dtypes]


MARKER_KERNEL = "spin_kernel"  # torch.cuda._sleep's kernel: launched before each case's profiled call


def cases(impl_names: str, shapes: str, dtypes: str) -> list[tuple[str, tuple[int, int], str]]:
    """(implementation, shape, dtype) for every combination the implementation accepts, in the
    order the launch target runs them."""
    from labtools import registry
    from labtools.cli import dtypes as parse_dtypes
    from labtools.cli import shapes as parse_shapes

    out = []
    for name in impl_names.split(","):
        impl = registry.get(name.strip())
        for shape in parse_shapes(shapes):
            out += [(impl.name, shape, d) for d in parse_dtypes(dtypes) if impl.accepts(shape, d)]
    return out


def case_label(case: tuple[str, tuple[int, int], str]) -> str:
    name, (m, n), dtype = case
    return f"{name} {m}x{n} {dtype}"


def label_cases(kernels: list[KernelProfile], case_list: list) -> list[KernelProfile]:
    """The profiles of the cases' own kernels, each with info["case"] set, the markers dropped.
    A launch target that ran len(case_list) markers is required: anything else means the
    profiles cannot be told apart, and they come back unlabelled, markers included."""
    marks = [i for i, k in enumerate(kernels) if MARKER_KERNEL in k.name]
    if len(marks) != len(case_list) or (kernels and marks[:1] != [0]):
        return kernels
    out = []
    for case, start, end in zip(case_list, marks, [*marks[1:], len(kernels)], strict=True):
        for k in kernels[start + 1 : end]:
            k.info["case"] = case_label(case)
            out.append(k)
    return out


def launch_cases(impl_names: str, shapes: str, dtypes: str) -> None:
    import torch

    from labtools import bench, registry

    for name, shape, dtype in cases(impl_names, shapes, dtypes):
        impl = registry.get(name)
        inputs = bench.make_inputs(impl, shape, dtype)
        for _ in range(3):  # compile, autotune, load modules: not profiled
            impl.fn(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        torch.cuda._sleep(1)  # the marker: what follows, up to the next one, is this case's
        impl.fn(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        del inputs


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] != "launch":
        sys.exit("usage: python -m labtools.ncu_cases launch IMPL_NAME[,...] MxN[,...] DTYPE[,...]")
    launch_cases(*sys.argv[2:])
