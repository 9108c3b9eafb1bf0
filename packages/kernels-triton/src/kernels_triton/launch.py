"""Launches: the form and config a launch gets (plan_form), and a template a layout that runs it.

At short shapes the host's work a call is what a user waits for, and Triton's `kernel[grid](...)` binds,
specialises and hashes the arguments in Python on every call: a template calls Triton's C launch itself.
Batch invariance: the form and the config, all that orders a row's reductions, never come from M."""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
from collections import OrderedDict
from collections.abc import Callable

import torch
import triton

from kernels_triton import cluster, configs, float64
from kernels_triton.configs import INTERPRET, SoftmaxConfig, dtype_name, next_pow2, num_sms
from kernels_triton.kernels import KERNELS, STREAMS

MAX_PLANS, MAX_TEMPLATES = 4096, 1024  # entries of a cache (remember: the oldest goes first); layouts
Template = Callable[..., None]  # template(*tensors): launch on their M = numel // N rows of the layout
_TEMPLATES: dict[tuple, Template] = OrderedDict()  # OrderedDicts: dropping the oldest entry is O(1)
PLAN_CACHES: list[dict] = [_TEMPLATES]  # every dict of templates
USED: dict[tuple, dict] = OrderedDict()  # (kernel, N, dtype name) -> its last tile config and source


def remember(cache: OrderedDict, key, value, limit: int = MAX_PLANS) -> None:
    if len(cache) >= limit:
        with contextlib.suppress(KeyError):  # emptied by another thread
            cache.popitem(last=False)
    cache[key] = value


def forget_plans() -> None:
    """Drop every template and what was read from the picks files (after a tune wrote new ones)."""
    configs.forget()
    for cache in PLAN_CACHES:
        cache.clear()


def route(name: str, m: int, n: int, dtype: torch.dtype, device: torch.device) -> str:
    """The form that runs a launch, whatever M >= 1: "cluster" or "tiles" (float64: plan_form's own)."""
    return "cluster" if cluster.applies(name[-3:], m, n, dtype, device) else "tiles"


@functools.cache
def gpu_name(device_index: int) -> str | None:
    return torch.cuda.get_device_name(device_index) if device_index >= 0 and not INTERPRET else None


def tile_meta(config: SoftmaxConfig, m: int, n: int, row_strides, itemsize: int) -> dict:
    """The constexprs of a launch, in the kernels' parameter order."""
    # the longest run of elements, up to 16 bytes, that N and every row stride are multiples of
    align = math.gcd(n, 16 // itemsize, *row_strides)
    block_n = min(config.block, next_pow2(n))  # one pass: [ROWS, BLOCK_N] tiles; looped: [BLOCK]
    rows, one_pass, packs, full = config.block // block_n, block_n >= n, 0, 0
    needs_mask = n % block_n != 0 or (one_pass and m % rows != 0)  # masks cost instructions and registers
    if config.warp_rows:  # BLOCK_N: the width of a pack across a warp, whose packs mask the row's end
        if config.block != config.num_warps * next_pow2(n):
            raise ValueError(f"{config.label()}: warp_rows needs block = num_warps x next_pow2(N), N = {n}")
        (block_n, packs, full), needs_mask = configs.warp_row_packs(n, itemsize), m % rows != 0
    return {"BLOCK": config.block, "BLOCK_N": block_n, "ROWS": rows, "ONE_PASS": one_pass, "NEEDS_MASK": needs_mask,
            "ALIGN": align, "L2_HINTS": config.l2_hints, "PACKS": packs, "FULL": full}  # fmt: skip


def launch(name: str, tensors: list[torch.Tensor], m: int, n: int, config: SoftmaxConfig | None = None,
           form: str | None = None) -> Template:  # fmt: skip
    """Launch kernel `name` on 2D (M, N) tensors with unit column stride, the output last (in
    place: one of the inputs); returns the template. form: instead of route()'s (timed alone)."""
    x, out = tensors[0], tensors[-1].data_ptr()
    # the row strides and the bases' 16-byte alignment: what cluster.packs() reads
    key = (name, n, config, form, x.dtype, x.get_device(), *[t.stride(0) for t in tensors],
           *[t.data_ptr() % 16 == 0 for t in tensors], any(t.data_ptr() == out for t in tensors[:-1]))  # fmt: skip
    if (template := _TEMPLATES.get(key)) is None:
        planned, chosen, source = plan_form(name, m, n, x.dtype, x.device, config, form)
        with torch.cuda.device(x.get_device()):  # Triton compiles on the current device (-1: none)
            if planned == "cluster":
                template = cluster_template(name[-3:], tensors, m, n)
            else:
                template = tiles_template(name, tensors, n, chosen)
                if form is None:  # not a form timed alone (plugin.py, tune.py)
                    remember(USED, (name, n, dtype_name(x.dtype)), {**chosen.fields(), "source": source})
        # kept once it has run: a cluster the device refuses (16 blocks) routes these rows again, to the tiles
        if planned == "cluster" and form is None:
            if not cluster.launched(lambda: template(*tensors), x.get_device(), n):
                return launch(name, tensors, m, n, config, form)
        else:
            template(*tensors)
        remember(_TEMPLATES, key, template, MAX_TEMPLATES)
        return template
    template(*tensors)
    return template


def plan_form(name: str, m: int, n: int, dtype: torch.dtype, device: torch.device, config: SoftmaxConfig | None = None,
              form: str | None = None) -> tuple[str, SoftmaxConfig | None, str]:  # fmt: skip
    """(form, config, source: where the config came from) of a launch, none of it from M."""
    if dtype == torch.float64:
        return "float64", SoftmaxConfig(min(1024, max(32, next_pow2(n))), 4), "float64"
    form = form or route(name, m, n, dtype, device)
    if form == "cluster":
        return form, None, "cluster"
    if config is not None:
        return form, config, "given"
    gpu = gpu_name(device.index if device.type == "cuda" else -1)
    return (form, *configs.choose(name, STREAMS[name], n, dtype, gpu))


def template(n: int, device_index: int, arity: int, bind: Callable) -> Template:
    """template(a, b) or template(a, b, c): a launch on M = a.numel() // N rows with bind(M, tensors)'s (grid
    x, *launcher's, the arguments after the pointers), kept for the last M alone (one tuple read once a call:
    threads never mix two M's; memory stays flat), its device made current (a function handle is its context's)."""
    stream, current_device = torch._C._cuda_getCurrentRawStream, torch._C._cuda_getDevice
    several, last = torch.cuda.device_count() > 1, (-1, *[None] * 9)  # last: (numel, *bind's)

    def rebind(run: Callable, ts: tuple) -> None:  # a new M, or another device current: then launch
        nonlocal last
        if (numel := ts[0].numel()) // n:
            last = last if last[0] == numel else (numel, *bind(numel // n, ts))
            if not several:
                return run(*ts)
            with torch.cuda.device(device_index):
                run(*ts)

    # The host path of every call: fixed arity, no tuple of tensors, the C launch in this frame.
    def run2(a, b) -> None:
        k, gx, c, function, coop, pdl, meta, annotations, signature, rest = last
        if k != a.numel() or (several and current_device() != device_index):
            return rebind(run2, (a, b))
        c(gx, 1, 1, stream(device_index), function, coop, pdl, meta, None, None, None, None, None,
          annotations, signature, (a.data_ptr(), b.data_ptr()) + rest)  # fmt: skip

    def run3(a, b, d) -> None:
        k, gx, c, function, coop, pdl, meta, annotations, signature, rest = last
        if k != a.numel() or (several and current_device() != device_index):
            return rebind(run3, (a, b, d))
        c(gx, 1, 1, stream(device_index), function, coop, pdl, meta, None, None, None, None, None,
          annotations, signature, (a.data_ptr(), b.data_ptr(), d.data_ptr()) + rest)  # fmt: skip

    return run2 if arity == 2 else run3


def tiles_template(name: str, tensors: list[torch.Tensor], n: int, config: SoftmaxConfig) -> Template:
    """The template of a tile kernel (kernels.py; float64.py's) and the compiled variants it met, by
    M % ROWS != 0 where a program takes ROWS whole rows (NEEDS_MASK) and M's integer width."""
    x = tensors[0]
    device_index, strides, itemsize = x.get_device(), tuple(t.stride(0) for t in tensors), x.element_size()
    fp64 = x.dtype == torch.float64
    kernel = (float64.KERNELS if fp64 else KERNELS)[name]
    meta_of = lambda m: {"BLOCK": config.block} if fp64 else tile_meta(config, m, n, strides, itemsize)
    first = meta_of(1)
    rows, one_pass = first.get("ROWS", 1), first.get("ONE_PASS", True)
    # looped: a persistent grid of about the card's bytes in flight an SM of tiles, enough to cover
    # memory latency, few enough rows in flight for L2 to keep them
    in_flight = configs.bytes_in_flight_per_sm(device_index)
    max_programs = num_sms(device_index) * max(1, in_flight // (config.block * itemsize * STREAMS[name]))
    programs = lambda m: (m + rows - 1) // rows if one_pass else min(m, max_programs)
    if INTERPRET:  # no compiled kernel: the kernel's Python runs on the tensors

        def interpret(*ts: torch.Tensor) -> None:
            m = ts[0].numel() // n
            ts = [t.view(m, n) for t in ts]
            kernel[(programs(m),)](*ts, *strides, m, n, **meta_of(m), num_warps=config.num_warps)

        return interpret
    variants: dict[tuple, tuple] = {}

    def bind(m: int, ts: tuple) -> tuple:
        if (variant := (one_pass and m % rows != 0, m >= 2**31)) not in variants:
            meta = meta_of(m)
            with torch.cuda.device(ts[0].get_device()):
                compiled = kernel.warmup(*ts, *strides, m, n, grid=(1,), **meta, num_warps=config.num_warps)
                compiled._init_handles()
            variants[variant] = launcher(compiled), (n, *meta.values())
        fixed, rest = variants[variant]
        return programs(m), *fixed, (*strides, m, *rest)

    return template(n, device_index, len(tensors), bind)


def cluster_template(direction: str, tensors: list[torch.Tensor], m: int, n: int) -> Template:
    """The template of cluster.py's kernel of `direction` ("fwd", "bwd"): M rows launch M clusters."""
    compiled, packed, rest = cluster.compiled_launch(direction, [t.view(m, n) for t in tensors])
    fixed = launcher(compiled, packed)
    return template(n, tensors[0].get_device(), len(tensors), lambda m, ts: (m, *fixed, rest))


# CudaLauncher.__call__'s parameters in each Triton whose driver.py this was written against: "3.6"
# passes the kernel's arguments to the C launch flat after the hooks, "3.9" as one tuple after two more.
C_LAUNCH_LAYOUTS = {
    "3.6": ("self", "gridX", "gridY", "gridZ", "stream", "function", "args"),
    "3.9": ("self", "gridX", "gridY", "gridZ", "stream", "function", "kernel_metadata", "launch_metadata",
            "launch_enter_hook", "launch_exit_hook", "args"),
}  # fmt: skip


def launcher(compiled, packed_metadata: tuple | None = None) -> tuple:
    """(c, function, cooperative, pdl, metadata, annotations, signature) of `compiled`, as template()'s runs
    call c: Triton 3.9's C launch itself where this Triton's launcher is one it was written against (its
    Python __call__ costs as much host time as the rest of a call), else an adapter. packed_metadata:
    cluster.py's, which Triton's runner would not pass; without it, c calls the runner while a profiler's
    hook is installed."""
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
    """The C_LAUNCH_LAYOUTS entry that calls `run`'s C launch directly, where __call__ adds nothing
    but constants (a CudaLauncher of that version and signature, no scratch, no sanitizer); else None."""
    version = ".".join((version or triton.__version__).split(".")[:2])
    if type(run).__name__ != "CudaLauncher":
        return None
    try:
        params = tuple(inspect.signature(type(run).__call__).parameters)
        adds = run.global_scratch_size or run.profile_scratch_size or getattr(run, "gsan_enabled", False)
        flags = (run.launch, run.launch_cooperative_grid, run.launch_pdl)
        if version == "3.9":
            flags += (run.arg_annotations, run.kernel_signature)
    except (AttributeError, TypeError, ValueError):
        return None
    return version if params == C_LAUNCH_LAYOUTS.get(version) and not adds and callable(flags[0]) else None


def _launch_hooks_installed() -> bool:
    """Whether a profiler installed a launch hook (None in older Triton, an empty chain in newer)."""
    hook = getattr(getattr(getattr(triton, "knobs", None), "runtime", None), "launch_enter_hook", None)
    return hook is not None and bool(getattr(hook, "calls", True))
