"""Launching a compiled Triton kernel at the least host cost: a template (launch.py) calls Triton's
C launch itself where the installed Triton's launcher is one this was written against (its Python
__call__ costs as much host time as the rest of a call), else an adapter that calls the launcher.
"""

from __future__ import annotations

import inspect

import triton

# The CudaLauncher.__call__ parameters of each Triton version whose body (backends/nvidia/
# driver.py) this was written against: "3.6" passes the kernel's arguments to the C launch flat
# after the hooks, "3.9" as one tuple after an argument annotation and a signature.
C_LAUNCH_LAYOUTS = {
    "3.6": ("self", "gridX", "gridY", "gridZ", "stream", "function", "args"),
    "3.9": ("self", "gridX", "gridY", "gridZ", "stream", "function", "kernel_metadata", "launch_metadata",
            "launch_enter_hook", "launch_exit_hook", "args"),
}  # fmt: skip


def launcher(compiled, packed_metadata: tuple | None = None) -> tuple:
    """(c, function, cooperative, pdl, metadata, annotations, signature) of `compiled` (a triton
    CompiledKernel): what a template passes as c(gx, 1, 1, stream, function, cooperative, pdl,
    metadata, None, None, None, None, None, annotations, signature, args), Triton 3.9's C launch
    without launch metadata, hooks or scratch. packed_metadata: launch metadata instead of the
    kernel's own (cluster.py's), which Triton's runner would not pass. Without it, while a
    profiler's launch hook is installed, c goes through the runner, which calls the hook."""
    hooked = _launch_hooks_installed()
    run = getattr(compiled, "run", None)
    version = None if hooked else c_launch_layout(run)
    packed = getattr(compiled, "packed_metadata", None) if packed_metadata is None else packed_metadata
    if version is None:  # Triton's runner (which calls a profiler's hook), or another version's launcher

        def runner(gx, gy, gz, stream, function, coop, pdl, packed, *rest):
            if packed_metadata is None and hooked:
                compiled[(gx, gy, gz)](*rest[-1])
            else:
                run(gx, gy, gz, stream, function, packed, None, None, None, *rest[-1])

        return runner, compiled.function, None, None, packed, None, None
    fixed = (compiled.function, run.launch_cooperative_grid, run.launch_pdl, packed)
    if version == "3.9":
        return run.launch, *fixed, run.arg_annotations, run.kernel_signature

    def flat(gx, gy, gz, stream, function, coop, pdl, packed, *rest):  # 3.6: the kernel's arguments flat
        run.launch(gx, gy, gz, stream, function, coop, pdl, None, None, packed, None, None, None, *rest[-1])

    return flat, *fixed, None, None


def c_launch_layout(run, version: str | None = None) -> str | None:
    """Which C_LAUNCH_LAYOUTS entry may call launcher `run`'s C launch directly: only where
    __call__ adds nothing but constants (a CudaLauncher of that version and signature, no global
    or profile scratch, no sanitizer). None: call the launcher itself."""
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
