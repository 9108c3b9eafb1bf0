"""The shapes of the cross-entropy family's launches (choose, programs, splits: from N, the dtype and
the rows' layout) and launch(kernel, grid, args, num_warps, **constexprs), at a small host cost.

Triton's `kernel[grid](...)` binds and specialises every argument in Python on every call: for
these kernels' two dozen arguments that is more host time than the rest of a call, and more than
a short call's device time. Here the compiled kernel is looked up by what Triton specialises it
on (each tensor's dtype and 16-byte alignment; each integer's being 1, its divisibility by 16
and its width; the constexprs; the warps) and launched through Triton's C launch
(launch.launcher) on the current stream of the kernel's device, made current for the launch
where it is not. Under the interpreter, or for a CPU tensor, Triton's own launch runs.
"""

from __future__ import annotations

import functools
import math

import torch

from kernels_triton.cluster import exchange_metadata
from kernels_triton.configs import INTERPRET, ROW_SHAPES
from kernels_triton.launch import launcher

MAX_LAUNCHERS = 1024  # compiled specialisations kept; past that the table starts again
_LAUNCHERS: dict[tuple, tuple] = {}


def specialization(args: tuple) -> tuple[list, list]:
    """(the arguments as the C launch takes them, what Triton's specialisation of a kernel reads
    from them: backends/compiler.py, a tensor's dtype and 16-byte alignment, an integer's being 1,
    its divisibility by 16 and its width), in one loop: on every call, so no call an argument."""
    flat, spec = [], []
    for a in args:
        if isinstance(a, torch.Tensor):
            p = a.data_ptr()
            flat.append(p)
            spec += (a.dtype, p % 16 == 0)
        else:  # an int (M, N, strides, ignore_index; a bool is taken as the int it is)
            flat.append(a)
            spec += (a == 1, a % 16 == 0, -(2**31) <= a < 2**31, a < 2**63)
    return flat, spec


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
    flat, spec = specialization(args)
    # id(kernel): a JITFunction hashes in Python; the kernels live as long as their modules
    key = (id(kernel), device, num_warps, cluster, maxnreg, *constexprs.items(), *spec)
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
    flat = (*flat, *values)
    if torch._C._cuda_getDevice() != device:  # a function handle belongs to its device's context
        with torch.cuda.device(device):
            return launch(kernel, grid, args, num_warps, cluster, maxnreg, **constexprs)
    c(grid, 1, 1, torch._C._cuda_getCurrentRawStream(device), function, coop, pdl, meta,
      None, None, None, None, None, annotations, signature, flat)  # fmt: skip


def align(n: int, rows: list[torch.Tensor]) -> int:
    """The largest power of two, at most 16 bytes of elements, dividing n and every row stride
    of `rows`: the ALIGN the kernels' vector hints rely on (1 for an odd n, as GPT-2's 50257)."""
    a = math.gcd(n, 16 // rows[0].element_size())
    for t in rows:
        if a > 1 and t.shape[0] > 1:
            a = math.gcd(a, t.stride(0))
    return a


def splits(n: int, rows: list[torch.Tensor]) -> tuple[int, dict]:
    """(OFF, {"ALIGN", "VEC", "LIKE"}): align(n, rows), and how the looped kernels split rows of n elements of `rows`
    (xent_rows.split). The split follows the first tensor's rows; OFF: where its base sits past
    a 16-byte boundary, in elements. VEC: 0 where every row of every tensor is whole 16-byte
    packs from a boundary (Triton's specialisation proves it, with ALIGN), else the elements of
    a pack. LIKE: every tensor's rows sit at the first's offsets from a boundary, so that their
    bodies may be hinted 16-byte aligned too."""
    size = rows[0].element_size()
    vec = 16 // size
    offs = [t.data_ptr() % 16 // size for t in rows]
    aligned = align(n, rows)
    whole = not any(offs) and aligned == vec
    m, stride = rows[0].shape[0], rows[0].stride(0)
    like = all(o == offs[0] and (m < 2 or (t.stride(0) - stride) % vec == 0) for o, t in zip(offs, rows))
    return offs[0], {"ALIGN": aligned, "VEC": 0 if whole else vec, "LIKE": like}


@functools.cache
def choose(n: int, itemsize: int) -> tuple[int, bool, int]:
    """(BLOCK, ONE_PASS, num_warps) for rows of n elements of `itemsize` bytes: (n, dtype) only.
    One pass: 64 bytes of the row a thread, so a short row is one warp's (its reductions stay
    in shuffles, with no exchange through shared memory)."""
    whole, block, warps = ROW_SHAPES[itemsize]
    width = 1 << max(n - 1, 0).bit_length()
    if width <= whole:
        return width, True, max(1, min(16, width * itemsize // 2048))
    return block, False, warps


def streamed(n: int, itemsize: int) -> tuple[int, int]:
    """(BLOCK, num_warps) of a kernel that reads a row once, in tiles (the recomputing backward):
    choose()'s, the tile no wider than the looped one."""
    block, _, warps = choose(n, itemsize)
    return min(block, ROW_SHAPES[itemsize][1]), warps


def looped_from(itemsize: int) -> int:
    """The shortest row that choose() loops over: from here a cluster holds it on sm_90 (cluster.py)."""
    return ROW_SHAPES[itemsize][0] + 1


INTERPRETER_PROGRAMS = 3  # under the interpreter: few programs, so the persistent loop runs
MIN_PROGRAMS_PER_SM = 2


@functools.cache
def device_caps(index: int) -> tuple[int, int]:
    props = torch.cuda.get_device_properties(index)
    return props.multi_processor_count, props.L2_cache_size


def programs(m: int, n: int, itemsize: int, one_pass: bool, device: torch.device) -> int:
    """Grid size for m rows. A looped row is read twice, and the second read should find it in
    L2: so the rows in flight are held to about half the L2, but to no fewer than
    MIN_PROGRAMS_PER_SM a SM (one program's tile, 16 KB, is too few bytes in flight to cover
    memory latency alone) and no more than four."""
    if INTERPRET or device.type != "cuda":
        return max(1, min(m, INTERPRETER_PROGRAMS))
    if one_pass:
        return max(1, m)
    sms, l2 = device_caps(device.index if device.index is not None else torch.cuda.current_device())
    in_flight = min(4 * sms, max(MIN_PROGRAMS_PER_SM * sms, l2 // (2 * n * itemsize)))
    return max(1, min(m, in_flight))
