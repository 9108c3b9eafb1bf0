"""Launching a compiled Triton kernel at the least host cost: go(grid_x, args) calls Triton's C
launch function directly where the installed Triton's launcher is one this was written against
(its Python __call__ costs as much host time as the rest of a call), else the launcher itself.
go makes its device the current one if it is not (a function handle belongs to that device's
context) and restores the caller's.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import torch
import triton

Launcher = Callable[[int, tuple], None]  # go(grid_x, args): pointers, then scalars and constexprs

# The CudaLauncher.__call__ parameters of each Triton version whose body (backends/nvidia/
# driver.py) go() was written against: "3.6" passes the kernel's arguments to the C launch flat
# after the hooks, "3.9" as one tuple after an argument annotation and a signature.
C_LAUNCH_LAYOUTS = {
    "3.6": ("self", "gridX", "gridY", "gridZ", "stream", "function", "args"),
    "3.9": ("self", "gridX", "gridY", "gridZ", "stream", "function", "kernel_metadata", "launch_metadata",
            "launch_enter_hook", "launch_exit_hook", "args"),
}  # fmt: skip


def launcher(compiled, device_index: int, packed_metadata: tuple | None = None) -> Launcher:
    """go(grid_x, args) that launches `compiled` (a triton CompiledKernel) on the current stream of
    CUDA device `device_index`. packed_metadata: launch metadata instead of the kernel's own
    (cluster.py's), which Triton's runner would not pass. Without it, while a profiler's launch
    hook is installed, go() goes through the runner, which calls the hook."""
    stream, current_device = torch._C._cuda_getCurrentRawStream, torch._C._cuda_getDevice
    hooked = _launch_hooks_installed()
    run = getattr(compiled, "run", None)
    version = None if hooked else c_launch_layout(run)
    packed = getattr(compiled, "packed_metadata", None) if packed_metadata is None else packed_metadata
    # Each go() is one Python frame between a template and the C launch.
    if version == "3.9":
        c, coop, pdl = run.launch, run.launch_cooperative_grid, run.launch_pdl
        annotations, signature, function = run.arg_annotations, run.kernel_signature, compiled.function

        def go(gx: int, args: tuple) -> None:  # metadata, no launch metadata, no hooks, no scratch
            if current_device() != device_index:
                with torch.cuda.device(device_index):
                    return go(gx, args)
            c(gx, 1, 1, stream(device_index), function, coop, pdl, packed, None, None, None, None, None,
              annotations, signature, args)  # fmt: skip

    elif version == "3.6":
        c, coop, pdl, function = run.launch, run.launch_cooperative_grid, run.launch_pdl, compiled.function

        def go(gx: int, args: tuple) -> None:  # no scratch, metadata, no launch metadata, no hooks
            if current_device() != device_index:
                with torch.cuda.device(device_index):
                    return go(gx, args)
            c(gx, 1, 1, stream(device_index), function, coop, pdl, None, None, packed, None, None, None,
              *args)  # fmt: skip

    else:  # Triton's runner (which calls a profiler's hook), or another version's launcher as it
        function = compiled.function

        def go(gx: int, args: tuple) -> None:
            if current_device() != device_index:
                with torch.cuda.device(device_index):
                    return go(gx, args)
            if packed_metadata is None and hooked:
                compiled[(gx, 1, 1)](*args)
            else:
                run(gx, 1, 1, stream(device_index), function, packed, None, None, None, *args)

    return go


def c_launch_layout(run, version: str | None = None) -> str | None:
    """Which C_LAUNCH_LAYOUTS entry go() may use to call launcher `run`'s C launch directly: only
    where __call__ adds nothing but constants (a CudaLauncher of that version and signature, no
    global or profile scratch, no sanitizer). None: call the launcher itself."""
    version = ".".join((version or triton.__version__).split(".")[:2])
    expected = C_LAUNCH_LAYOUTS.get(version)
    if expected is None or type(run).__name__ != "CudaLauncher":
        return None
    try:
        params = tuple(inspect.signature(type(run).__call__).parameters)
        needs_scratch = run.global_scratch_size or run.profile_scratch_size
        flags = (run.launch, run.launch_cooperative_grid, run.launch_pdl)
        if version == "3.9":
            flags += (run.arg_annotations, run.kernel_signature)
    except (AttributeError, TypeError, ValueError):
        return None
    if params != expected or needs_scratch or getattr(run, "gsan_enabled", False) or not callable(flags[0]):
        return None
    return version


def _launch_hooks_installed() -> bool:
    """Whether a profiler installed a launch hook (None in older Triton, an empty chain in newer)."""
    hook = getattr(getattr(getattr(triton, "knobs", None), "runtime", None), "launch_enter_hook", None)
    return hook is not None and bool(getattr(hook, "calls", True))
