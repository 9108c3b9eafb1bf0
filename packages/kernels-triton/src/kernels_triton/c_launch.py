"""Launching a compiled Triton kernel from Python at the least host cost: a plan is a closure
that calls Triton's C launch function directly, with the grid, the function handle and every
scalar argument bound, where the installed Triton's launcher is one it was written against;
else it calls that launcher as Triton's own runner would. Every plan first makes its device
the current one if it is not (a plan's function handle belongs to that device's context), and
leaves the caller's current device as it was.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
import triton

Plan = Callable[..., None]  # plan(*tensors): launch on tensors laid out as the plan's key says


def on_device(device_index: int, plan: Plan, *tensors: torch.Tensor) -> None:
    """Run `plan` with its device current: a plan's function handle belongs to that device's
    context, and a launch runs in the current one (the caller's device is restored after)."""
    with torch.cuda.device(device_index):
        plan(*tensors)


def direct_launcher(
    compiled,
    program_grid: tuple[int, int, int],
    n_tensors: int,
    rest: tuple,
    device_index: int,
    packed_metadata: tuple | None = None,
) -> Plan:
    """plan(*tensors) that launches `compiled` (a triton CompiledKernel) on the tensors'
    data pointers followed by `rest`, with everything but the stream and the pointers bound.

    Where the Triton version's launcher is one c_launch_layout() knows, the plan calls
    Triton's C launch function itself with the arguments the launcher's Python __call__
    would pass it (no scratch buffers, no hooks): that __call__ costs as much host time as
    the rest of a call. Otherwise the plan calls the launcher with what Triton's own runner
    passes it, or, while a profiler's launch hook is installed, goes through that runner.

    packed_metadata: the launch metadata to launch with instead of the compiled kernel's
    (cluster.py's: num_ctas = C and more shared memory than Triton allocated). Triton's runner
    would launch with the kernel's own, so such a plan never goes through it: while a launch
    hook is installed it calls the launcher without the hook."""
    gx, gy, gz = program_grid
    stream, current_device = torch._C._cuda_getCurrentRawStream, torch._C._cuda_getDevice
    hooked = _launch_hooks_installed()
    if packed_metadata is None and (
        hooked or not all(hasattr(compiled, a) for a in ("run", "function", "packed_metadata"))
    ):
        runner = compiled[program_grid]

        def run_through_runner(*ts):
            if current_device() != device_index:
                return on_device(device_index, run_through_runner, *ts)
            runner(*(t.data_ptr() for t in ts), *rest)

        return run_through_runner
    launcher, function = compiled.run, compiled.function
    packed = compiled.packed_metadata if packed_metadata is None else packed_metadata
    layout = None if hooked else c_launch_layout(launcher)
    if layout is None:  # a launcher of another Triton version: called as its runner calls it

        def call_launcher(*ts):
            if current_device() != device_index:
                return on_device(device_index, call_launcher, *ts)
            launcher(gx, gy, gz, stream(device_index), function, packed, None, None, None,
                     *(t.data_ptr() for t in ts), *rest)  # fmt: skip

        return call_launcher
    c_launch, coop, pdl = launcher.launch, launcher.launch_cooperative_grid, launcher.launch_pdl

    # One closure per layout and arity: star-arguments would cost a tuple and a loop per call.
    if layout == "3.6" and n_tensors == 2:

        def plan(a, b):
            if current_device() != device_index:
                return on_device(device_index, plan, a, b)
            c_launch(
                gx, gy, gz, stream(device_index), function, coop, pdl,
                None, None, packed, None, None, None,  # scratch, scratch, metadata, no hooks
                a.data_ptr(), b.data_ptr(), *rest,
            )  # fmt: skip

    elif layout == "3.6":

        def plan(a, b, c):
            if current_device() != device_index:
                return on_device(device_index, plan, a, b, c)
            c_launch(
                gx, gy, gz, stream(device_index), function, coop, pdl,
                None, None, packed, None, None, None,
                a.data_ptr(), b.data_ptr(), c.data_ptr(), *rest,
            )  # fmt: skip

    else:
        annotations, signature = launcher.arg_annotations, launcher.kernel_signature
        if n_tensors == 2:

            def plan(a, b):
                if current_device() != device_index:
                    return on_device(device_index, plan, a, b)
                c_launch(
                    gx, gy, gz, stream(device_index), function, coop, pdl,
                    packed, None, None, None, None, None,  # metadata, no hooks, no scratch
                    annotations, signature, (a.data_ptr(), b.data_ptr(), *rest),
                )  # fmt: skip

        else:

            def plan(a, b, c):
                if current_device() != device_index:
                    return on_device(device_index, plan, a, b, c)
                c_launch(
                    gx, gy, gz, stream(device_index), function, coop, pdl,
                    packed, None, None, None, None, None,
                    annotations, signature, (a.data_ptr(), b.data_ptr(), c.data_ptr(), *rest),
                )  # fmt: skip

    return plan


# The CudaLauncher.__call__ parameters of each Triton version whose body (backends/nvidia/
# driver.py) the plans above were written against: "3.6" passes the kernel's arguments to the
# C launch flat after the hooks, "3.9" as one tuple after an argument annotation and a signature.
C_LAUNCH_LAYOUTS = {
    "3.6": ("self", "gridX", "gridY", "gridZ", "stream", "function", "args"),
    "3.9": (
        "self", "gridX", "gridY", "gridZ", "stream", "function",
        "kernel_metadata", "launch_metadata", "launch_enter_hook", "launch_exit_hook", "args",
    ),
}  # fmt: skip


@functools.cache
def _call_parameters(launcher_class: type) -> tuple[str, ...]:
    import inspect

    return tuple(inspect.signature(launcher_class.__call__).parameters)


def c_launch_layout(launcher, version: str | None = None) -> str | None:
    """Which C_LAUNCH_LAYOUTS entry a plan may use to call `launcher`'s C launch directly:
    only for a CudaLauncher of that Triton version, with that __call__ signature, whose
    kernel needs no global or profile scratch and runs without the sanitizer (the cases in
    which __call__ adds nothing but constants). None: call the launcher itself."""
    version = ".".join((version or triton.__version__).split(".")[:2])
    expected = C_LAUNCH_LAYOUTS.get(version)
    if expected is None or type(launcher).__name__ != "CudaLauncher":
        return None
    try:
        params = _call_parameters(type(launcher))
        needs_scratch = launcher.global_scratch_size or launcher.profile_scratch_size
        flags = (launcher.launch, launcher.launch_cooperative_grid, launcher.launch_pdl)
        if version == "3.9":
            flags += (launcher.arg_annotations, launcher.kernel_signature)
    except (AttributeError, TypeError, ValueError):
        return None
    if (
        params != expected
        or needs_scratch
        or getattr(launcher, "gsan_enabled", False)
        or not callable(flags[0])
    ):
        return None
    return version


def _launch_hooks_installed() -> bool:
    """Whether a profiler installed a launch hook (None in older Triton, an empty chain in newer)."""
    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    hook = getattr(runtime, "launch_enter_hook", None)
    return hook is not None and bool(getattr(hook, "calls", True))
