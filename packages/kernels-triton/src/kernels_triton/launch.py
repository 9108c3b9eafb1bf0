"""Launches: which form runs a launch (route), and everything a launch needs, decided once a layout.

At short shapes the kernel runs for a few microseconds, so the host's work per call is what a
user waits for. Triton's usual path (`kernel[grid](...)`) binds and specialises the arguments
and computes a cache key in Python on every call. Here a template per layout (kernel, N,
config, batch_invariant, dtype, device, row strides, pointer alignment, in place) holds the
form (route), the config and the launchers of the compiled kernels (c_launch.py); a call with
any row count M derives the grid and the scalar arguments from M with integer arithmetic and
calls Triton's C launch directly. A new M keeps nothing: no plan, no cache entry, no closure
(a process that sees millions of row counts keeps a flat memory and gives the garbage collector
no new objects to walk). M is not specialised (kernels.py): every M of a layout shares a compiled
kernel, but for M's integer width and, where whole rows share a program, whether M is a multiple
of them (NEEDS_MASK): at most four variants a template.

A compiled kernel comes from this process, else from an earlier process (compiled_index.py,
which skips Triton's once-per-process installation hash), else from Triton's JIT. A launch hook
installed for profiling (triton.knobs.runtime) after a template was made is not seen by it;
templates made while one is installed go through Triton's own runner, which calls it. Under
Triton's interpreter a template runs the kernel's Python.

Batch invariance (the default): the form and the config, everything that decides the order in
which a row's elements are reduced, come from the layout alone, never from M, so row i's bits
do not depend on the rest of the batch. batch_invariant=False lets the row count choose too
(a warp a row for a few short fp32 rows an SM, split rows for few rows, the cluster kernels'
one-wave form, the picks tuned at the nearest row count), each template then made for one M.

The template cache is bounded and drops its oldest entry first (remember).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable

import torch

from kernels_triton import c_launch, cluster, compiled_index, configs, float64
from kernels_triton import split_row as _split_row_module
from kernels_triton.configs import INTERPRET, SoftmaxConfig, dtype_name, next_pow2, num_sms
from kernels_triton.kernels import KERNELS, STREAMS

BYTES_IN_FLIGHT_PER_SM = 32 * 1024  # about memory bandwidth x latency / number of SMs on an H100
MAX_PLANS = 4096  # entries of a cache of templates (remember); past that the oldest goes first
MAX_TEMPLATES = 1024  # templates (layouts; and row counts, without batch invariance)
# Opt-in (KERNELS_TRITON_TUNE=1): a launch whose bucket has no tuned pick is tuned first; the
# tuner (kernels_triton.tune.tune_one) is set by kernels_triton.softmax, which imports tune.
TUNE_ON_FIRST_USE = os.environ.get("KERNELS_TRITON_TUNE") == "1"
tune_first_use: Callable | None = None

Template = Callable[[list, int], None]  # template(tensors, m): launch on M rows of the layout
# OrderedDicts: dropping the oldest entry is O(1) (a plain dict's first entry is found by
# stepping over every slot freed before it, which grows with the entries dropped).
_TEMPLATES: dict[tuple, Template] = OrderedDict()
# Every dict that keeps templates (this module's, and softmax.py's fast paths'): forget_plans()
# empties them all.
PLAN_CACHES: list[dict] = [_TEMPLATES]


def remember(cache: dict, key, value, limit: int | None = None) -> None:
    """cache[key] = value, the oldest entry dropped first once `limit` (MAX_PLANS) are held
    (dicts keep insertion order)."""
    if len(cache) >= (MAX_PLANS if limit is None else limit):
        try:
            if isinstance(cache, OrderedDict):
                cache.popitem(last=False)
            else:
                cache.pop(next(iter(cache)), None)
        except (KeyError, StopIteration, RuntimeError):  # emptied or changed by another thread
            pass
    cache[key] = value


def forget_plans() -> None:
    """Drop every template made so far and what was read from the picks files: the next launch of
    each layout plans anew, with the picks as they are now (after a tune wrote new ones)."""
    configs.forget()
    for plans in PLAN_CACHES:
        plans.clear()


# (kernel, N, rows_per_sm, dtype name) -> the config its launches ran with in this process
# and where it came from ("given", "tuned", "committed", "warp rows", "heuristic", "interpreter")
USED: dict[tuple, dict] = OrderedDict()
MAX_USED = 1024

# The split-row kernels: applies(n_rows, n_cols, dtype, device, *, backward) -> bool,
# forward(x2d, y2d, *, config), backward(y2d, dy2d, dx2d, *, config), compiled_launch(direction,
# tensors, *, config), default_config and device_sms. A module attribute so a test can swap it.
split_row = _split_row_module

# Rows longer than this go to the split-row kernels where split_row.applies() takes them (and
# no cluster does): one program a row reads such a row twice. With batch_invariant=False,
# shorter rows go there too in launches of SPLIT_ROW_MIN_BYTES or more, or of fewer rows than
# SMs (split_row.applies), where one program a row leaves SMs idle.
SPLIT_ROW_MIN_COLS = 32768
SPLIT_ROW_MIN_BYTES = 64 * 1024 * 1024


def split_row_applies(
    name: str, m: int, n: int, dtype: torch.dtype, device: torch.device, batch_invariant: bool = True
) -> bool:
    """Whether a launch of kernel `name` on M rows of N goes to the split-row kernels."""
    # On CUDA only: under the CPU interpreter the exchange waits out every late peer, so the
    # one-program-a-row kernels stay the tested CPU path (split_row has its own CPU tests).
    if split_row is None or device.type != "cuda" or dtype == torch.float64:
        return False
    wide = n > SPLIT_ROW_MIN_COLS
    if not batch_invariant:
        wide = wide or m * n * dtype.itemsize >= SPLIT_ROW_MIN_BYTES
    return wide and split_row.applies(m, n, dtype, device, backward=name == "softmax_bwd")


def route(name: str, m: int, n: int, dtype: torch.dtype, device: torch.device, in_place: bool,
          batch_invariant: bool = True) -> str:  # fmt: skip
    """The form that runs a launch: the first of these that takes it.

        form        takes
        float64     float64 tensors (float64.py: fp64 arithmetic throughout)
        cluster     sm_90, rows of 32768 to 262144 (cluster.applies: N and dtype alone)
        split_row   out of place, rows too long for one program (split_row_applies)
        tiles       the rest: one pass, looped or a warp a row, as the config says (kernels.py)

    With batch_invariant (the default) nothing here depends on M beyond its being >= 1."""
    if dtype == torch.float64:
        return "float64"
    if cluster.applies(name[-3:], m, n, dtype, device):
        return "cluster"
    # In place, the split-row kernels could read what a peer has already written: their
    # fallback rereads a late peer's chunk from memory. The tile kernels read every element of
    # a row before they write it, and no program reads another's row.
    if not in_place and split_row_applies(name, m, n, dtype, device, batch_invariant):
        return "split_row"
    return "tiles"


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


def launch(
    name: str,
    tensors: list[torch.Tensor],
    m: int,
    n: int,
    config: SoftmaxConfig | None = None,
    batch_invariant: bool = True,
    form: str | None = None,
) -> Template:
    """Launch kernel `name` on 2D (M, N) tensors with unit column stride, inputs first, the
    output last (which may be one of the inputs: in place); returns the template it launched
    with, which launches any other M of this layout: template(tensors, m).
    form: one of route()'s forms instead of the one route() picks (to time a form alone)."""
    x = tensors[0]
    layout = (
        name, n, config, batch_invariant, form, x.dtype, x.get_device(),
        *[t.stride(0) for t in tensors], *[t.data_ptr() % 16 == 0 for t in tensors], in_place(tensors),
    )  # fmt: skip
    key = layout if batch_invariant else (layout, m)  # else the template is this M's alone
    template = _TEMPLATES.get(key)
    if template is None:
        with _device_of(x):  # Triton compiles on the current device
            template = make_template(name, tensors, m, n, config, batch_invariant, form)
        remember(_TEMPLATES, key, template, MAX_TEMPLATES)
    template(tensors, m)
    return template


def _device_of(t: torch.Tensor):
    """A context in which t's CUDA device is the current one (nothing to do on the CPU or where
    it already is)."""
    if not t.is_cuda or torch._C._cuda_getDevice() == t.get_device():
        return contextlib.nullcontext()
    return torch.cuda.device(t.device)


def in_place(tensors: list[torch.Tensor]) -> bool:
    """Whether the output (last) is one of the inputs: the same memory, as softmax_ passes it."""
    out = tensors[-1].data_ptr()
    return any(t.data_ptr() == out for t in tensors[:-1])


def plan_form(
    name: str, m: int, n: int, dtype: torch.dtype, device: torch.device, in_place: bool,
    config: SoftmaxConfig | None = None, batch_invariant: bool = True, form: str | None = None,
) -> tuple[str, object, str]:  # fmt: skip
    """(form, setting, source) of a launch: route()'s form and everything in it that decides the
    order of a row's reductions. tiles and float64: the SoftmaxConfig; split_row: the
    SplitConfig; cluster: whether the forward takes its one-wave form. With batch_invariant
    (the default) none of it depends on M: the templates are made from this, so their rows'
    bits cannot either. source: where a tiles config came from (configs.choose). form: this
    form instead of route()'s."""
    form = form or route(name, m, n, dtype, device, in_place, batch_invariant)
    index = device.index if device.type == "cuda" else -1
    if form == "float64":
        return form, SoftmaxConfig(float64.block(n), float64.NUM_WARPS), "float64"
    if form == "cluster":
        return form, not batch_invariant and cluster.fits_one_wave(m, n, num_sms(index)), "cluster"
    if form == "split_row":
        sms = split_row.device_sms(device)
        return form, split_row.default_config(name[-3:], m, n, sms, batch_invariant), "split row"
    if config is not None:
        return form, config, "given"
    if batch_invariant:
        return (form, *configs.choose_invariant(name, STREAMS[name], n, dtype, gpu_name(index)))
    return (form, *configs.choose(name, STREAMS[name], m, n, dtype, gpu_name(index), num_sms(index)))


def make_template(
    name: str, tensors: list[torch.Tensor], m: int, n: int, config: SoftmaxConfig | None,
    batch_invariant: bool = True, form: str | None = None,
) -> Template:  # fmt: skip
    """The template of the layout of `tensors` (see the module docstring): the form and setting
    plan_form() gives, and what they need for any M (for M alone without batch_invariant)."""
    x = tensors[0]
    form, setting, source = plan_form(
        name, m, n, x.dtype, x.device, in_place(tensors), config, batch_invariant, form
    )
    if form == "cluster":
        return cluster_template(name[-3:], tensors, m, n, one_wave=setting)
    if form == "split_row":
        split = split_row.forward if name == "softmax_fwd" else split_row.backward
        return lambda ts, m_: split(*[t.view(m_, n) for t in ts], config=setting)
    if (
        TUNE_ON_FIRST_USE
        and tune_first_use is not None
        and source not in ("given", "tuned", "interpreter", "float64")
    ):
        setting, source = tune_first_use(name, m, n, x.dtype, x.get_device()), "tuned"
    kernel = float64.KERNELS[name] if form == "float64" else KERNELS[name]
    return tiles_template(name, kernel, tensors, n, setting, source)


_data_ptr = torch.Tensor.data_ptr


def tiles_template(
    name: str, kernel, tensors: list[torch.Tensor], n: int, config: SoftmaxConfig, source: str
) -> Template:
    """The template of a tile kernel (kernels.py; float64.py's, one program a row): the config,
    and the launcher of each compiled variant met. Besides M's integer width, a variant differs
    from another only in NEEDS_MASK where whole rows share a program (M % ROWS): at most four,
    held here. A call derives the grid from M with integer arithmetic and keeps nothing."""
    x = tensors[0]
    device_index = x.get_device()
    strides = tuple(t.stride(0) for t in tensors)
    aligned = tuple(t.data_ptr() % 16 == 0 for t in tensors)
    itemsize, dtype = x.element_size(), x.dtype
    fp64 = source == "float64"
    sms = num_sms(device_index)
    recorded = 0  # the rows_per_sm buckets recorded in USED, a bit each

    def record(m: int) -> None:
        nonlocal recorded
        bucket = configs.rows_per_sm(m, sms)
        recorded |= bucket
        remember(USED, (name, n, bucket, dtype_name(dtype)), {**config.fields(), "source": source}, MAX_USED)

    def meta_of(m: int) -> dict:
        return {"BLOCK": config.block} if fp64 else tile_meta(config, m, n, strides, itemsize)

    first = meta_of(1)
    rows, one_pass = first.get("ROWS", 1), first.get("ONE_PASS", True)
    # looped: a persistent grid of about BYTES_IN_FLIGHT_PER_SM of tiles per SM (see kernels.py)
    in_flight = BYTES_IN_FLIGHT_PER_SM // (config.block * itemsize * STREAMS[name])
    max_programs = sms * max(1, in_flight)

    def programs(m: int) -> int:
        return (m + rows - 1) // rows if one_pass else min(m, max_programs)

    if INTERPRET:  # no compiled kernel: the kernel's Python runs on the tensors

        def interpret(ts: list[torch.Tensor], m: int) -> None:
            record(m)
            ts = [t if t.dim() == 2 else t.view(m, n) for t in ts]
            kernel[(programs(m),)](*ts, *strides, m, n, **meta_of(m), num_warps=config.num_warps)

        return interpret
    variants: list = [None] * 4  # by (M % ROWS != 0 in one pass) + 2 * (M >= 2**31)

    def compile_variant(ts: list[torch.Tensor], m: int):
        # Everything Triton specialises the kernel on but M, which it does not (kernels.py) beyond
        # its integer width: N and the row strides exactly, pointer alignment, the constexprs and
        # the warps. Every M of a variant gets the same compiled kernel.
        meta = meta_of(m)
        specialization = (name, n, strides, dtype, aligned, tuple(meta.values()), m < 2**31, config.num_warps)
        with _device_of(ts[0]):
            compiled = compiled_index.load_or_compile(
                kernel, specialization, device_index,
                lambda: kernel.warmup(*ts, *strides, m, n, grid=(1,), **meta, num_warps=config.num_warps),
            )  # fmt: skip
        return c_launch.launcher(compiled, device_index), tuple(meta.values())

    def run(ts: list[torch.Tensor], m: int) -> None:
        if not recorded & min(configs.ROWS_PER_SM_CAP, 1 << ((m - 1) // sms).bit_length()):
            record(m)  # the first launch of its rows_per_sm bucket: (m - 1) // sms + 1 rounded up
        i = (one_pass and m % rows != 0) + 2 * (m >= 2**31)
        variant = variants[i]
        if variant is None:
            variant = variants[i] = compile_variant(ts, m)
        go, meta_values = variant
        go(programs(m), (*map(_data_ptr, ts), *strides, m, n, *meta_values))

    return run


def cluster_template(direction: str, tensors: list[torch.Tensor], m: int, n: int,
                     one_wave: bool | None = False) -> Template:  # fmt: skip
    """The cluster kernel (cluster.py) of `direction` ("fwd" or "bwd") compiled for the layout of
    `tensors`; a launch on M rows is M clusters of C blocks, one a row: the launch metadata
    cluster.py gives names C blocks a cluster and the shared memory of the exchange.
    one_wave: the forward's one-wave form or not (None: as M decides, cluster.fits_one_wave)."""
    rows = [t if t.dim() == 2 else t.view(m, n) for t in tensors]
    compiled, packed, _, rest = cluster.compiled_launch(direction, rows, one_wave=one_wave)
    go = c_launch.launcher(compiled, tensors[0].get_device(), packed)

    def run(ts: list[torch.Tensor], m: int) -> None:
        go(m, (*map(_data_ptr, ts), *rest))

    return run


def cluster_plan(direction: str, tensors: list[torch.Tensor], m: int, n: int) -> Template:
    """The cluster kernel's template for these tensors, in the form their row count gives it,
    launched once: the tests run the kernel at sizes the route leaves to other forms."""
    template = cluster_template(direction, tensors, m, n, one_wave=None)
    template(tensors, m)
    return template


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
