"""Softmax for long rows, one read and one write per element, in Triton: the host side.

A row of N elements is cut into chunks, each held by one program of a group, and the programs
exchange their chunks' partials through a scratch buffer (split_row_kernels.py: the kernels,
the exchange and why it cannot deadlock). Here: which launches the kernels take (applies), the
config of a launch (a chunk and its warps, widened for long rows; for few rows halved only
without batch invariance: the chunk decides a row's sums), the persistent grid sized from the
compiled kernel's occupancy, the exchange buffer of each (device, stream), and the public
forward and backward.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections import OrderedDict
from dataclasses import dataclass

import torch

from kernels_triton import compiled_index
from kernels_triton.configs import DTYPES, INTERPRET
from kernels_triton.split_row_kernels import (
    EPOCH,
    EPOCH_LIMIT,
    FALLBACK_SUB,
    FALLBACKS,
    FINISHED,  # noqa: F401 - the tests read the scratch buffer through this module
    HEADER,
    NOT_SPECIALIZED,
    SPIN_LIMIT,
    split_bwd_kernel,
    split_fwd_kernel,
)

MAX_PROGRAMS_PER_SM = 32  # the hardware limit of resident blocks per SM (sm_80 .. sm_90)


@dataclass(frozen=True)
class SplitConfig:
    """chunk: elements one program holds (a power of two); num_warps: warps a program;
    programs_per_sm: cap on resident programs an SM (None: the compiled kernel's occupancy);
    prefetch: load the chunk of the next row before exchanging the current one (None: the
    dtype's entry in PREFETCH, and off for a launch that has one wave only);
    compensated: the forward's sums carry their rounding errors (row_sum; None: for fp32 on a
    GPU, not under the interpreter, whose custom reductions run an element at a time in
    Python, about 15 times slower; 16-bit outputs round far above the difference)."""

    chunk: int
    num_warps: int
    programs_per_sm: int | None = None
    prefetch: bool | None = None
    compensated: bool | None = None

    def __post_init__(self):
        if self.chunk < 16 or self.chunk & (self.chunk - 1):
            raise ValueError(f"chunk must be a power of two >= 16, got {self.chunk}")
        if self.num_warps not in (1, 2, 4, 8, 16, 32):
            raise ValueError(f"num_warps must be a power of two up to 32, got {self.num_warps}")
        for name in ("prefetch", "compensated"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, bool):
                raise ValueError(f"{name} must be None, False or True, got {value!r}")


# 64 fp32 values a thread in the forward (x), 32 + 32 in the backward (y and dy): the
# configs that held the most bytes on chip an SM and ran fastest among those timed; the
# forward, which loads ahead in 16-bit types, over programs of twice the backward's width.
FORWARD_CONFIG = SplitConfig(chunk=8192, num_warps=4)
BACKWARD_CONFIG = SplitConfig(chunk=4096, num_warps=4)
INTERPRETER_CONFIG = SplitConfig(chunk=1024, num_warps=4)
# Whether a config that leaves `prefetch` unset loads the next row's chunk ahead, by storage
# dtype. On for 16-bit storage: its waves move half the bytes of fp32 ones in the same
# registers, so the exchange is a larger part of each wave, and the chunk ahead costs half
# the registers of the fp32 values it becomes. Off for fp32, where it costs as many as the
# current chunk: fewer programs an SM (the grid is sized from the compiled kernel's
# occupancy either way) for an exchange that is already a smaller part of the wave. (In the
# fp32 backward it was faster at some shapes and slower at others.) Either way a row's
# partials and their merge are the same, so `prefetch` never changes a row's bits: the forward
# writes e * exp(m - M) / S in both forms but the fp32 one without it, which is off for fp32.
PREFETCH = {torch.float32: False, torch.float16: True, torch.bfloat16: True}

MIN_CHUNK = 1024  # few rows: chunks are halved down to this to give every SM a program
MAX_WARPS = 16  # long rows: chunks are doubled, with the warps, up to this many (512 threads)
MIN_COLS = 4096  # below this a row fits one program and the one-pass kernel is already one read


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length() if n > 1 else 1


@dataclass(frozen=True)
class _Device:
    """What the grid is sized from."""

    sms: int
    regs_per_sm: int = 65536
    threads_per_sm: int = 2048
    shared_per_sm: int = 233472  # bytes a block may use on sm_90, 1 KiB reserved per block below


def device_sms(device: torch.device) -> int:
    """The SMs the split-row grid is sized for (the interpreter's stand-in count on the CPU)."""
    return _device(device).sms


def _device(device: torch.device) -> _Device:
    if device.type != "cuda":
        return _Device(
            sms=64
        )  # the interpreter: programs run one after another; 64 covers 2**18 + 1 in 4096 chunks
    p = torch.cuda.get_device_properties(device)
    return _Device(
        sms=p.multi_processor_count,
        regs_per_sm=getattr(p, "regs_per_multiprocessor", 65536),
        threads_per_sm=getattr(p, "max_threads_per_multi_processor", 2048),
        shared_per_sm=getattr(p, "shared_memory_per_multiprocessor", 233472),
    )


def _occupancy(n_regs: int, shared: int, num_warps: int, dev: _Device) -> int:
    """Blocks of a compiled kernel that one SM holds at once: the least of the register,
    thread, shared-memory and block limits (registers are allocated 256 a warp)."""
    regs_per_warp = _cdiv(max(n_regs, 1) * 32, 256) * 256
    by_regs = (dev.regs_per_sm // regs_per_warp) // num_warps
    by_threads = dev.threads_per_sm // (32 * num_warps)
    by_shared = dev.shared_per_sm // (shared + 1024)
    return max(1, min(by_regs, by_threads, by_shared, MAX_PROGRAMS_PER_SM))


def _choose_groups(M: int, max_groups: int) -> int:
    """Groups (rows in flight): as few waves as the co-resident programs allow, and the
    fewest groups that still give that many waves, so the waves are evenly full."""
    waves = _cdiv(M, max_groups)
    return _cdiv(M, waves)


_SCRATCH: dict[tuple, torch.Tensor] = {}
_LOCK = threading.Lock()


def _scratch(device: torch.device) -> torch.Tensor:
    """The exchange buffer of the current stream on `device` (see the module docstring):
    header + two words per program per wave parity, epoch starting at 1. `cuda` without an
    index is the current device, whose buffer launches use (they name cuda:N)."""
    if device.type == "cuda":
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        key = (device.index, torch.cuda.current_stream(device).cuda_stream)
    else:
        key = (device.type, 0)
    buf = _SCRATCH.get(key)
    if buf is None:
        with _LOCK:
            buf = _SCRATCH.get(key)
            if buf is None:
                n_words = HEADER + 4 * _device(device).sms * MAX_PROGRAMS_PER_SM
                buf = torch.zeros(n_words, dtype=torch.int64, device=device)
                buf[EPOCH] = 1
                _SCRATCH[key] = buf
    return buf


def fallback_count(device: torch.device | str | None = None) -> int:
    """How many times, on the current stream of `device`, a program computed a late peer's
    partial itself since the buffer was made (a diagnostic: ~0 when the grid is co-resident)."""
    device = torch.device(device if device is not None else ("cpu" if INTERPRET else "cuda"))
    return int(_scratch(device)[FALLBACKS].item())


@dataclass(frozen=True)
class _Plan:
    kernel: object
    config: SplitConfig  # as launched: prefetch decided
    groups: int
    split: int
    programs_per_sm: int
    meta: dict


_PLANS: dict[tuple, _Plan] = OrderedDict()
MAX_PLANS = 4096
_OCCUPANCY: dict[tuple, int] = {}


def _meta(N: int, config: SplitConfig, spin_limit: int, direction: str = "fwd") -> dict:
    split = _cdiv(N, config.chunk)
    return {
        "CHUNK": config.chunk,
        # The peers' words are polled as a vector of LANES, at least one per thread of the
        # program, so that no word is held by two threads: each word is loaded by one thread,
        # and every reduction over the lanes (how many are missing, the row's max and sum) is
        # the same number in every thread. With fewer lanes than threads a word would be
        # loaded by several threads that may see it arrive at different polls, reductions
        # would run per warp or per group of lanes, and threads could disagree on whether to
        # take the fallback, whose tile reductions have barriers the others would not meet.
        "LANES": max(_next_pow2(split), 32 * config.num_warps),
        "NEEDS_MASK": N % config.chunk != 0,
        "SPIN_LIMIT": spin_limit,
        "FALLBACK_TILE": min(config.chunk, FALLBACK_SUB),  # divides the chunk: tiles stay inside it
        "PREFETCH": bool(config.prefetch),
        **({"COMPENSATED": bool(config.compensated)} if direction == "fwd" else {}),
        "num_warps": config.num_warps,
        "num_stages": 1,
    }


def _programs_per_sm(kernel, args: list, meta: dict, config: SplitConfig, device: torch.device) -> int:
    if config.programs_per_sm is not None:
        return config.programs_per_sm
    if device.type != "cuda":
        return 1
    key = (
        kernel,
        device.index,
        *(a.dtype if isinstance(a, torch.Tensor) else None for a in args),
        *meta.items(),
    )
    occ = _OCCUPANCY.get(key)
    if occ is None:
        compiled = _compiled(kernel, args, meta, device)
        occ = _occupancy(compiled.n_regs, compiled.metadata.shared, config.num_warps, _device(device))
        _OCCUPANCY[key] = occ
    return occ


def _specialization(kernel, args: list, meta: dict) -> tuple:
    """At least what Triton specializes a compiled kernel on: each tensor's dtype and 16-byte
    alignment, the value of each integer it specializes (M, N, the row strides), the width of
    the others, and the constexprs, warps and stages."""
    parts = []
    for name, a in zip(kernel.arg_names, args, strict=False):
        if isinstance(a, torch.Tensor):
            parts.append((name, str(a.dtype), a.data_ptr() % 16 == 0))
        elif name in NOT_SPECIALIZED:
            parts.append((name, -(2**31) <= a < 2**31))
        else:
            parts.append((name, a))
    return (tuple(parts), tuple(sorted(meta.items())))


def _compiled(kernel, args: list, meta: dict, device: torch.device):
    """The kernel compiled for these arguments: one this process has, else one an earlier
    process compiled or Triton's warmup compiles now (compiled_index.load_or_compile)."""
    return compiled_index.load_or_compile(
        kernel,
        _specialization(kernel, args, meta),
        device.index,
        lambda: kernel.warmup(*args, grid=(1,), **meta),
    )


def _widened(config: SplitConfig, N: int, sms: int) -> SplitConfig:
    """config with chunk and warps doubled together (the values a thread stay the same), up
    to MAX_WARPS, while a row of N would need more programs than there are SMs."""
    chunk, warps = config.chunk, config.num_warps
    while _cdiv(N, chunk) > sms and warps < MAX_WARPS:
        chunk, warps = chunk * 2, warps * 2
    return SplitConfig(chunk, warps)


def _sized_config(config: SplitConfig, M: int, N: int, sms: int) -> SplitConfig:
    """config widened for rows of N (_widened), then, for few rows, halved (chunk and warps)
    until the rows' chunks give every SM a program, down to MIN_CHUNK."""
    config = _widened(config, N, sms)
    chunk, warps = config.chunk, config.num_warps
    while M * _cdiv(N, chunk) < sms and chunk > MIN_CHUNK:
        chunk, warps = chunk // 2, max(1, warps // 2)
    return SplitConfig(chunk, warps)


def default_config(direction: str, M: int, N: int, sms: int, batch_invariant: bool = False) -> SplitConfig:
    """The direction's config, sized for M rows of N on `sms` SMs (_sized_config); with
    batch_invariant for rows of N whatever M (_widened): the chunk decides a row's sums."""
    if INTERPRET:
        return INTERPRETER_CONFIG
    config = FORWARD_CONFIG if direction == "fwd" else BACKWARD_CONFIG
    return _widened(config, N, sms) if batch_invariant else _sized_config(config, M, N, sms)


def _plan(direction: str, tensors: list[torch.Tensor], config: SplitConfig | None, spin_limit: int | None):
    x = tensors[0]
    M, N = x.shape
    if config is None:
        config = default_config(direction, M, N, _device(x.device).sms)
    if config.compensated is None:
        config = dataclasses.replace(config, compensated=x.dtype == torch.float32 and not INTERPRET)
    spin_limit = SPIN_LIMIT if spin_limit is None else spin_limit
    key = (direction, M, N, x.dtype, x.device, config, spin_limit)
    plan = _PLANS.get(key)
    if plan is not None:
        return plan
    if config.prefetch is None:
        # the dtype's choice, unless every row fits one wave without it (then there is no next
        # row to load, and the registers of the chunk ahead would only lower the occupancy) or
        # its lower occupancy leaves too few programs for a row
        plan = _new_plan(direction, tensors, dataclasses.replace(config, prefetch=False), spin_limit)
        if PREFETCH[x.dtype] and plan.groups < M:
            with contextlib.suppress(ValueError):
                plan = _new_plan(direction, tensors, dataclasses.replace(config, prefetch=True), spin_limit)
    else:
        plan = _new_plan(direction, tensors, config, spin_limit)
    if len(_PLANS) >= MAX_PLANS:  # the oldest first: memory stays flat however many shapes
        _PLANS.popitem(last=False)
    _PLANS[key] = plan
    return plan


def _new_plan(direction: str, tensors: list[torch.Tensor], config: SplitConfig, spin_limit: int) -> _Plan:
    """The grid and meta-parameters of a launch at a config whose `prefetch` is decided."""
    x = tensors[0]
    M, N = x.shape
    kernel = split_fwd_kernel if direction == "fwd" else split_bwd_kernel
    meta = _meta(N, config, spin_limit, direction)
    scratch = _scratch(x.device)
    split = _cdiv(N, config.chunk)
    args = [*tensors, scratch, M, N, *(t.stride(0) for t in tensors), 1, split, scratch.numel()]
    per_sm = _programs_per_sm(kernel, args, meta, config, x.device)
    max_programs = _device(x.device).sms * per_sm
    max_programs = min(max_programs, (scratch.numel() - HEADER) // 4)
    if split > max_programs:
        raise ValueError(f"rows of {N} need {split} programs at once; at most {max_programs} fit")
    groups = _choose_groups(M, max_programs // split)
    return _Plan(kernel, config, groups, split, per_sm, meta)


def _run(direction, tensors, config, spin_limit):
    """Launch through Triton's JIT; returns (the compiled kernel, the plan, the arguments after
    the tensors: the scratch buffer first)."""
    plan = _plan(direction, tensors, config, spin_limit)
    M, N = tensors[0].shape
    scratch = _scratch(tensors[0].device)
    strides = [t.stride(0) for t in tensors]
    args = (scratch, M, N, *strides, plan.groups, plan.split, scratch.numel())
    try:
        if INTERPRET:
            compiled = plan.kernel[(plan.groups * plan.split,)](*tensors, *args, **plan.meta)
        else:  # the compiled kernel launched as the JIT would, without the JIT
            compiled = _compiled(plan.kernel, [*tensors, *args], plan.meta, tensors[0].device)
            constexprs = [plan.meta[name] for name in plan.kernel.arg_names[len(tensors) + len(args) :]]
            compiled[(plan.groups * plan.split, 1, 1)](
                *(t.data_ptr() for t in tensors), scratch.data_ptr(), *args[1:], *constexprs
            )
    except BaseException:
        # A launch that stopped part way (the interpreter raising inside a program) leaves the
        # finished-programs counter mid-count: the next launch on this stream gets a fresh buffer.
        _SCRATCH.pop(next((k for k, v in _SCRATCH.items() if v is scratch), None), None)
        raise
    return compiled, plan, args


def _check(tensors: dict[str, torch.Tensor]) -> None:
    first_name, first = next(iter(tensors.items()))
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 2 or t.stride(1) != 1 or t.stride(0) < t.shape[1]:
            raise ValueError(
                f"{name} must be a 2-D tensor with unit column stride, got shape {tuple(t.shape)}"
            )
        if t.dtype not in DTYPES:
            raise TypeError(f"{name} has dtype {t.dtype}; split-row softmax takes float32, float16, bfloat16")
        if t.shape != first.shape or t.dtype != first.dtype or t.device != first.device:
            raise ValueError(
                f"{name} is {tuple(t.shape)} {t.dtype} on {t.device}, {first_name} is "
                f"{tuple(first.shape)} {first.dtype} on {first.device}: they must match"
            )
        if not t.is_cuda and not INTERPRET:
            raise ValueError(f"{name} is on {t.device}; Triton kernels need CUDA (or TRITON_INTERPRET=1)")


def _span(t: torch.Tensor) -> tuple[int, int]:
    start = t.data_ptr()
    return start, start + ((t.shape[0] - 1) * t.stride(0) + t.shape[1]) * t.element_size()


def _check_not_overlapping(out_name: str, out: torch.Tensor, inputs: dict[str, torch.Tensor]) -> None:
    """An output may not share memory with an input: a program that computes a late peer's
    partial reads that peer's chunk of the input, which the peer may already have overwritten."""
    lo, hi = _span(out)
    for name, t in inputs.items():
        t_lo, t_hi = _span(t)
        if lo < t_hi and t_lo < hi:
            raise ValueError(f"{out_name} overlaps {name} in memory; the output must be a separate tensor")


def applies(n_rows: int, n_cols: int, dtype: torch.dtype, device, *, backward: bool = False) -> bool:
    """Whether this path should be used: rows too long for one program's registers, or
    rows long enough to split (>= MIN_COLS) but fewer than the SMs, which one program a
    row would leave idle. `backward` asks for the backward (the thresholds differ)."""
    device = torch.device(device)
    if dtype not in DTYPES or n_rows < 1 or n_cols < MIN_COLS or n_rows >= EPOCH_LIMIT:
        return False
    if device.type != "cuda" and not INTERPRET:
        return False
    config = BACKWARD_CONFIG if backward else FORWARD_CONFIG
    dev = _device(device)
    if _cdiv(n_cols, _widened(config, n_cols, dev.sms).chunk) > dev.sms:
        return False  # a row would need more than one program an SM, even at MAX_WARPS
    # Past these row lengths kernels_triton.softmax's own kernels read a row twice; at them
    # (4096 x 32768) those were faster than this path, except the fp32 backward.
    if backward:
        own_limit = 16384 if dtype == torch.float32 else 32768
    else:
        own_limit = 32768
    return n_cols > own_limit or n_rows < dev.sms


_NAMES = {"fwd": ("x2d", "y2d"), "bwd": ("y2d", "dy2d", "dx2d")}


def _checked_run(direction: str, tensors: list[torch.Tensor], config, spin_limit):
    """Check the tensors (named as forward/backward name them) and launch; what _run returns,
    or None for empty tensors (nothing to launch)."""
    names = _NAMES[direction]
    _check(dict(zip(names, tensors, strict=True)))
    if not tensors[0].numel():
        return None
    _check_not_overlapping(names[-1], tensors[-1], dict(zip(names[:-1], tensors[:-1])))
    return _run(direction, tensors, config, spin_limit)


def compiled_launch(direction: str, tensors: list[torch.Tensor], *, config: SplitConfig | None = None):
    """Launch `direction` ("fwd": x2d, y2d; "bwd": y2d, dy2d, dx2d) at the default config, as
    forward/backward do, and return what a launch of the same compiled kernel needs on tensors
    of the same shape, row strides, dtype and alignment: (compiled kernel, grid, the arguments
    after the tensors' pointers in the kernel's parameter order, constexprs included, and the
    stream whose scratch buffer those arguments name). kernels_triton's launch plans call it
    once and then launch directly, with no trip through the JIT. None under the interpreter
    (or for empty tensors)."""
    ran = _checked_run(direction, tensors, config, None)
    if ran is None or INTERPRET or ran[0] is None:
        return None
    compiled, plan, args = ran
    scratch = args[0]
    constexprs = [plan.meta[name] for name in plan.kernel.arg_names[len(tensors) + len(args) :]]
    stream = torch.cuda.current_stream(tensors[0].device).cuda_stream
    return compiled, (plan.groups * plan.split, 1, 1), (scratch.data_ptr(), *args[1:], *constexprs), stream


def forward(x2d: torch.Tensor, y2d: torch.Tensor, *, config=None, spin_limit=None) -> None:
    """y2d = softmax(x2d, dim=-1), written into y2d; x2d and y2d are 2-D, unit column stride,
    same shape and dtype (fp32, fp16 or bf16; arithmetic in fp32), not overlapping."""
    _checked_run("fwd", [x2d, y2d], config, spin_limit)


def backward(
    y2d: torch.Tensor, dy2d: torch.Tensor, dx2d: torch.Tensor, *, config=None, spin_limit=None
) -> None:
    """dx2d = y2d * (dy2d - sum(y2d * dy2d, dim=-1)), written into dx2d (as forward)."""
    _checked_run("bwd", [y2d, dy2d, dx2d], config, spin_limit)


__all__ = ["SplitConfig", "applies", "backward", "compiled_launch", "fallback_count", "forward"]
