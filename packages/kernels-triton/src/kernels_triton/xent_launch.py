"""launch(kernel, grid, args, num_warps, **constexprs): the cross-entropy family's launches at a
small host cost.

Triton's `kernel[grid](...)` binds and specialises every argument in Python on every call: for
these kernels' two dozen arguments that is more host time than the rest of a call, and more than
a short call's device time. Here the compiled kernel is looked up by what Triton specialises it
on (each tensor's dtype and 16-byte alignment; each integer's being 1, its divisibility by 16
and its width; the constexprs; the warps) and launched through Triton's C launch
(launch.launcher) on the current stream of the kernel's device, made current for the launch
where it is not. Under the interpreter, or for a CPU tensor, Triton's own launch runs.
"""

from __future__ import annotations

import torch

from kernels_triton.cluster import exchange_metadata
from kernels_triton.configs import INTERPRET
from kernels_triton.launch import launcher

MAX_LAUNCHERS = 1024  # compiled specialisations kept; past that the table starts again
_LAUNCHERS: dict[tuple, tuple] = {}


def specialization(arg) -> object:
    """What Triton's specialisation of a kernel reads from one argument (backends/compiler.py:
    an integer's value 1 and divisibility by 16, its width; a tensor's dtype and alignment)."""
    if isinstance(arg, torch.Tensor):
        return arg.dtype, arg.data_ptr() % 16 == 0
    if isinstance(arg, int) and not isinstance(arg, bool):
        return arg == 1, arg % 16 == 0, -(2**31) <= arg < 2**31, arg < 2**63
    return type(arg), arg if isinstance(arg, bool) else None


def launch(kernel, grid: int, args: tuple, num_warps: int, cluster: int = 0, maxnreg: int | None = None,
           **constexprs) -> None:  # fmt: skip
    """kernel[(grid,)](*args, num_warps=num_warps, **constexprs) on the device of args[0] (a
    tensor); every parameter after args is one of constexprs. cluster = C > 0: a cluster.py
    kernel, launched as `grid` clusters of C blocks (the launch metadata's num_ctas), whose last
    argument, slot_base, is appended here."""
    first = args[0]
    if INTERPRET or not first.is_cuda:
        kernel[(grid,)](*args, num_warps=num_warps, **constexprs)
        return
    device = first.get_device()
    key = (kernel, device, num_warps, cluster, maxnreg, *constexprs.items(), *map(specialization, args))
    entry = _LAUNCHERS.get(key)
    if entry is None:
        options = {"num_stages": 1} if cluster else {}
        if maxnreg is not None:
            options["maxnreg"] = maxnreg
        with torch.cuda.device(device):  # Triton compiles for, and loads into, the current device
            compiled = kernel.warmup(*args, *((0,) if cluster else ()), grid=(grid,), num_warps=num_warps,
                                     **options, **constexprs)  # fmt: skip
            compiled._init_handles()
        values = tuple(constexprs[name] for name in kernel.arg_names[len(args) + bool(cluster) :])
        packed = None
        if cluster:
            slot_base, packed = exchange_metadata(compiled, num_warps, cluster)
            values = (slot_base, *values)
        if len(_LAUNCHERS) >= MAX_LAUNCHERS:
            _LAUNCHERS.clear()
        entry = _LAUNCHERS[key] = (*launcher(compiled, packed), values)
    c, function, coop, pdl, meta, annotations, signature, values = entry
    flat = (*[a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args], *values)
    if torch._C._cuda_getDevice() != device:  # a function handle belongs to its device's context
        with torch.cuda.device(device):
            return launch(kernel, grid, args, num_warps, cluster, maxnreg, **constexprs)
    c(grid, 1, 1, torch._C._cuda_getCurrentRawStream(device), function, coop, pdl, meta,
      None, None, None, None, None, annotations, signature, flat)  # fmt: skip
