"""Launch plans: everything a launch needs, decided once per distinct launch and reused.

At short shapes the kernel runs for a few microseconds, so the host's work per call is
what a user waits for. Triton's usual path (`kernel[grid](...)`) binds and specialises
the arguments and computes a cache key in Python on every call. Here a launch is planned
once per distinct (kernel, M, N, row strides, dtype, device, pointer alignment, config):
the config (configs.choose, no timing), the constexprs, the grid and the compiled kernel:
one this process already has for another M, else one an earlier process compiled
(compiled_index.py, which skips Triton's once-per-process installation hash), else what
Triton's JIT compiles or finds in its on-disk cache on that first launch.
The plan is a closure that calls Triton's C launch function directly (or, for a Triton
version whose launcher it does not know, the compiled kernel's launcher), with the grid,
function handle and every scalar argument already packed; a later call costs a dict
lookup, the current stream, two or three data pointers and that launch.

The key holds everything Triton specialised the compiled kernel on: integer arguments on
== 1 and divisibility by 16 (here their values), pointers on 16-byte alignment (here each
pointer's address mod 16 == 0). M is not specialised (kernels.py), so every M shares a
compiled kernel. A launch hook installed for profiling (triton.knobs.runtime) after a plan
was made is not seen by that plan; plans made while one is installed go through Triton's
own runner, which calls it.

Under Triton's interpreter there is no compiled kernel: a plan runs the kernel's Python
on the tensors.

Whole rows or split rows: split_row_applies() is the one place that sends a launch to a
kernel that splits each row over several programs instead of the kernels here, and
cluster.takes() the one place that sends a launch to the kernels that split each row over the
blocks of a thread-block cluster (cluster.py), which come first where they apply.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import math
import os
import threading
from collections.abc import Callable

import torch
import triton

from kernels_triton import cluster, compiled_index, configs
from kernels_triton import split_row as _split_row_module
from kernels_triton.configs import INTERPRET, SoftmaxConfig, dtype_name, next_pow2, num_sms
from kernels_triton.kernels import KERNELS, STREAMS

BYTES_IN_FLIGHT_PER_SM = 32 * 1024  # about memory bandwidth x latency / number of SMs on an H100
MAX_PLANS = 4096
# Opt-in: a launch whose bucket has no tuned pick is tuned first (kernels_triton.tune).
TUNE_ON_FIRST_USE = (
    os.environ.get("KERNELS_TRITON_TUNE") == "1"
)  # distinct launches remembered; past that the cache starts afresh

Plan = Callable[..., None]  # plan(*tensors): launch on tensors laid out as the plan's key says
_PLANS: dict[tuple, Plan] = {}
# Every dict that keeps plans made by make_plan (this module's, and softmax.py's fast paths'), each
# with the config its launches were planned with: forget_plans() empties them all.
PLAN_CACHES: list[dict] = [_PLANS]


def forget_plans() -> None:
    """Drop every plan made so far and what was read from the picks files: the next launch of
    each shape plans anew, with the picks as they are now (after a tune wrote new ones)."""
    configs.forget()
    for plans in PLAN_CACHES:
        plans.clear()


# (kernel, N, rows_per_sm, dtype name) -> the config its launches ran with in this process
# and where it came from ("given", "tuned", "committed", "heuristic", "interpreter")
USED: dict[tuple, dict] = {}

# The split-row kernels: applies(n_rows, n_cols, dtype, device, *, backward) -> bool,
# forward(x2d, y2d), backward(y2d, dy2d, dx2d) and compiled_launch(direction, tensors). A
# module attribute so a test can swap it.
split_row = _split_row_module


# Below SPLIT_ROW_MIN_BYTES, only rows longer than SPLIT_ROW_SMALL_MIN_COLS go to the split-row
# kernels (where split_row.applies() takes them: few rows, or rows past 32768): on an H100, one
# program a row was faster up to rows of 32768 elements, the split-row kernels 1.1-4.4x faster
# past them, down to a single row (measurements/2026-11-25-h100/split-row-direct/).
SPLIT_ROW_MIN_BYTES = 64 * 1024 * 1024
SPLIT_ROW_SMALL_MIN_COLS = 32768


def split_row_applies(name: str, m: int, n: int, dtype: torch.dtype, device: torch.device) -> bool:
    """Whether a launch of kernel `name` on M rows of N goes to the split-row kernels
    instead of one program per row (decided once per plan)."""
    # On CUDA only: under the CPU interpreter the exchange waits out every late peer, so the
    # one-program-a-row kernels stay the tested CPU path (split_row has its own CPU tests).
    return (
        split_row is not None
        and device.type == "cuda"
        and (m * n * dtype.itemsize >= SPLIT_ROW_MIN_BYTES or n > SPLIT_ROW_SMALL_MIN_COLS)
        and split_row.applies(m, n, dtype, device, backward=name == "softmax_bwd")
    )


@functools.cache
def gpu_name(device_index: int) -> str | None:
    return torch.cuda.get_device_name(device_index) if device_index >= 0 and not INTERPRET else None


def tile_meta(config: SoftmaxConfig, m: int, n: int, row_strides, itemsize: int) -> dict:
    """The constexprs a launch with `config` gets, in the kernels' parameter order."""
    # the longest run of elements, up to 16 bytes, that N and every row stride are multiples of
    align = math.gcd(n, 16 // itemsize, *row_strides)
    if config.warp_rows:  # PACKS tiles of [ROWS, BLOCK_N], BLOCK_N the width of a pack across a warp
        rows = config.block // next_pow2(n)
        if rows != config.num_warps:
            raise ValueError(
                f"config {config.label()}: warp_rows needs block = num_warps x next_pow2(N) (N = {n})"
            )
        width, packs, full = configs.warp_row_packs(n, itemsize)
        return {"BLOCK": config.block, "BLOCK_N": width, "ROWS": rows, "ONE_PASS": True,
                "NEEDS_MASK": m % rows != 0, "ALIGN": align, "L2_HINTS": False, "PACKS": packs, "FULL": full}  # fmt: skip
    block_n = min(config.block, next_pow2(n))  # one pass: [ROWS, BLOCK_N] tiles; looped: [BLOCK]
    rows = config.block // block_n
    one_pass = block_n >= n
    return {
        "BLOCK": config.block,
        "BLOCK_N": block_n,
        "ROWS": rows,
        "ONE_PASS": one_pass,
        # masks cost instructions and registers: only for ragged rows or a ragged last tile
        "NEEDS_MASK": n % block_n != 0 or (one_pass and m % rows != 0),
        "ALIGN": align,
        "L2_HINTS": config.l2_hints,
        "PACKS": 0,  # not a warp a row
        "FULL": 0,
    }


def grid(meta: dict, m: int, n_sms: int, column_bytes: int) -> tuple[int, int, int]:
    """One program per ROWS rows in one pass; looped, a persistent grid with about
    BYTES_IN_FLIGHT_PER_SM of tiles per SM (see kernels.py). column_bytes: what one tile
    column loads, the element size times the tensors read."""
    if meta["ONE_PASS"]:
        return ((m + meta["ROWS"] - 1) // meta["ROWS"], 1, 1)
    programs_per_sm = max(1, BYTES_IN_FLIGHT_PER_SM // (meta["BLOCK"] * column_bytes))
    return (min(m, n_sms * programs_per_sm), 1, 1)


def launch(
    name: str, tensors: list[torch.Tensor], m: int, n: int, config: SoftmaxConfig | None = None
) -> Plan:
    """Launch kernel `name` on 2D (M, N) tensors with unit column stride, inputs first, the
    output last (which may be one of the inputs: in place); returns the plan it launched with."""
    key = (
        name,
        m,
        n,
        config,
        tensors[0].dtype,
        tensors[0].get_device(),
        *[t.stride(0) for t in tensors],
        *[t.data_ptr() % 16 == 0 for t in tensors],
        in_place(tensors),
    )
    plan = _PLANS.get(key)
    if plan is None:
        with _device_of(tensors[0]):  # Triton compiles and launches on the current device
            plan = make_plan(name, tensors, m, n, config)
        if len(_PLANS) >= MAX_PLANS:
            _PLANS.clear()
        _PLANS[key] = plan
    else:
        plan(*tensors)
    return plan


def _device_of(t: torch.Tensor):
    """A context in which t's CUDA device is the current one (nothing to do on the CPU)."""
    return torch.cuda.device(t.device) if t.is_cuda else contextlib.nullcontext()


def _on_device(device_index: int, plan: Plan, *tensors: torch.Tensor) -> None:
    """Run `plan` with its device current: a plan's function handle belongs to that device's
    context, and a launch runs in the current one (the caller's device is restored after)."""
    with torch.cuda.device(device_index):
        plan(*tensors)


def in_place(tensors: list[torch.Tensor]) -> bool:
    """Whether the output (last) is one of the inputs: the same memory, as softmax_ passes it."""
    out = tensors[-1].data_ptr()
    return any(t.data_ptr() == out for t in tensors[:-1])


def make_plan(name: str, tensors: list[torch.Tensor], m: int, n: int, config: SoftmaxConfig | None) -> Plan:
    """Plan a launch on tensors like these (and launch it once, which compiles), then
    return the plan for the next launch on tensors with the same key."""
    x = tensors[0]
    if (plan := cluster_plan(name[-3:], tensors, m, n)) is not None:
        return plan
    # In place, the split-row kernels could read what a peer has already written: their
    # fallback rereads a late peer's chunk from memory. The kernels below read every element
    # of a row before they write it, and no program reads another's row.
    if not in_place(tensors) and split_row_applies(name, m, n, x.dtype, x.device):
        return split_row_plan(name, tensors, m, n)
    device_index = x.get_device()
    sms = num_sms(device_index)
    source = "given"
    if config is None:
        config, source = configs.choose(name, STREAMS[name], m, n, x.dtype, gpu_name(device_index), sms)
        if TUNE_ON_FIRST_USE and source not in ("tuned", "interpreter"):
            from kernels_triton import tune

            config, source = tune.tune_one(name, m, n, x.dtype, device_index), "tuned"
    USED[(name, n, configs.rows_per_sm(m, sms), dtype_name(x.dtype))] = {**config.fields(), "source": source}
    meta = tile_meta(config, m, n, [t.stride(0) for t in tensors], x.element_size())
    program_grid = grid(meta, m, sms, x.element_size() * STREAMS[name])
    scalars = (*(t.stride(0) for t in tensors), m, n)
    rest = (*scalars, *meta.values())
    # Everything Triton specialises the kernel on but M, which it does not (kernels.py) beyond its
    # integer width: N and the row strides exactly, pointer alignment, M < 2**31, the constexprs
    # and the warps. A plan for a new M (a growing sequence, a last partial batch) gets the same
    # compiled kernel without a trip through Triton's JIT, which costs tens of microseconds.
    specialization = (
        name, n, scalars[:-2], x.dtype, tuple(t.data_ptr() % 16 == 0 for t in tensors),
        m < 2**31, tuple(meta.values()), config.num_warps,
    )  # fmt: skip
    kernel = KERNELS[name]
    if INTERPRET:  # no compiled kernel: a plan runs the kernel's Python on the tensors

        def interpret(*ts):
            ts = [t if t.dim() == 2 else t.view(m, n) for t in ts]
            kernel[program_grid](*ts, *scalars, **meta, num_warps=config.num_warps)

        interpret(*tensors)
        return interpret
    compiled = compiled_index.load_or_compile(  # another M reuses one: no trip through the JIT
        kernel, specialization, device_index,
        lambda: kernel.warmup(*tensors, *scalars, grid=program_grid, **meta, num_warps=config.num_warps),
    )  # fmt: skip
    plan = direct_launcher(compiled, program_grid, len(tensors), rest, device_index)
    plan(*tensors)
    return plan


def split_row_plan(name: str, tensors: list[torch.Tensor], m: int, n: int) -> Plan:
    """Launch on the split-row kernels once through Triton's JIT, then return a plan that
    launches the same compiled kernel directly while the current stream is the one it was
    planned on: the kernel's arguments name that stream's exchange buffer (split_row.py), and
    a call on another stream goes through the JIT, which finds that stream's buffer."""

    def as_rows(ts):
        return [t if t.dim() == 2 else t.view(m, n) for t in ts]

    split = split_row.forward if name == "softmax_fwd" else split_row.backward

    def through_jit(*ts):
        split(*as_rows(ts))

    launched = split_row.compiled_launch(name[-3:], as_rows(tensors))
    if launched is None:  # under the interpreter: launched, but no compiled kernel to reuse
        return through_jit
    compiled, program_grid, rest, planned_stream = launched
    device_index = tensors[0].get_device()
    direct = direct_launcher(compiled, program_grid, len(tensors), rest, device_index)
    stream, current_device = torch._C._cuda_getCurrentRawStream, torch._C._cuda_getDevice

    def plan(*ts):
        if current_device() != device_index:
            return _on_device(device_index, plan, *ts)
        if stream(device_index) == planned_stream:
            direct(*ts)
        else:
            through_jit(*ts)

    return plan


def cluster_plan(
    direction: str, tensors: list[torch.Tensor], m: int, n: int, *, any_size: bool = False
) -> Plan | None:
    """Launch `direction` ("fwd" or "bwd") on the cluster kernel (cluster.py) once, which compiles
    it, and return a plan that launches the same compiled kernel as clusters of C blocks, one a
    row: the launch metadata cluster.py gives names C blocks a cluster and the shared memory of
    the exchange. None, with nothing launched, where cluster.takes() sends the launch elsewhere,
    unless any_size (the tests: the kernel at sizes the dispatch leaves to other kernels)."""
    rows = [t if t.dim() == 2 else t.view(m, n) for t in tensors]
    if not any_size and not cluster.takes(direction, rows):
        return None
    compiled, packed, grid_x, rest = cluster.compiled_launch(direction, rows)
    plan = direct_launcher(
        compiled, (grid_x, 1, 1), len(tensors), rest, tensors[0].get_device(), packed_metadata=packed
    )
    plan(*tensors)
    return plan


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
                return _on_device(device_index, run_through_runner, *ts)
            runner(*(t.data_ptr() for t in ts), *rest)

        return run_through_runner
    launcher, function = compiled.run, compiled.function
    packed = compiled.packed_metadata if packed_metadata is None else packed_metadata
    layout = None if hooked else c_launch_layout(launcher)
    if layout is None:  # a launcher of another Triton version: called as its runner calls it

        def call_launcher(*ts):
            if current_device() != device_index:
                return _on_device(device_index, call_launcher, *ts)
            launcher(gx, gy, gz, stream(device_index), function, packed, None, None, None,
                     *(t.data_ptr() for t in ts), *rest)  # fmt: skip

        return call_launcher
    c_launch, coop, pdl = launcher.launch, launcher.launch_cooperative_grid, launcher.launch_pdl

    # One closure per layout and arity: star-arguments would cost a tuple and a loop per call.
    if layout == "3.6" and n_tensors == 2:

        def plan(a, b):
            if current_device() != device_index:
                return _on_device(device_index, plan, a, b)
            c_launch(
                gx, gy, gz, stream(device_index), function, coop, pdl,
                None, None, packed, None, None, None,  # scratch, scratch, metadata, no hooks
                a.data_ptr(), b.data_ptr(), *rest,
            )  # fmt: skip

    elif layout == "3.6":

        def plan(a, b, c):
            if current_device() != device_index:
                return _on_device(device_index, plan, a, b, c)
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
                    return _on_device(device_index, plan, a, b)
                c_launch(
                    gx, gy, gz, stream(device_index), function, coop, pdl,
                    packed, None, None, None, None, None,  # metadata, no hooks, no scratch
                    annotations, signature, (a.data_ptr(), b.data_ptr(), *rest),
                )  # fmt: skip

        else:

            def plan(a, b, c):
                if current_device() != device_index:
                    return _on_device(device_index, plan, a, b, c)
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


def warm_up_in_background() -> threading.Thread | None:
    """Start, on a daemon thread, the work Triton does once per process before its first
    launch of any kernel, compiled or cached: hashing its own installation into the cache
    key (triton.runtime.cache.triton_key, about half a second, mostly in hashlib and file
    reads that release the GIL) and importing the Gluon modules its argument binder checks
    against. Started when kernels_triton is imported, it overlaps with the caller's own work
    until the first launch (setting up CUDA, building a model), which then waits only for
    what is left. Not under the interpreter, nor with KERNELS_TRITON_WARM_UP=0."""
    if INTERPRET or os.environ.get("KERNELS_TRITON_WARM_UP") == "0":
        return None

    def warm_up() -> None:
        try:
            if not torch.cuda.is_available():
                return
            from triton.runtime.cache import triton_key

            triton_key()  # functools-cached: the first launch reads the result
            importlib.import_module("triton.experimental.gluon.nvidia.hopper")
        except Exception:  # noqa: BLE001 - only a head start: the first launch does this work itself
            pass

    thread = compiled_index.warm_up = threading.Thread(
        target=warm_up, name="kernels_triton warm-up", daemon=True
    )
    thread.start()
    return thread


def _launch_hooks_installed() -> bool:
    """Whether a profiler installed a launch hook (None in older Triton, an empty chain in newer)."""
    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    hook = getattr(runtime, "launch_enter_hook", None)
    return hook is not None and bool(getattr(hook, "calls", True))
