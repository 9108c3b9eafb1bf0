"""Row-wise softmax in Triton: forward and backward, autotuned, any row length.

    y  = softmax(x)              along `dim`            (fp32 / fp16 / bf16 in, same dtype out)
    dx = y * (dy - sum(y * dy))  along `dim`            (the backward, from the saved output y)

Every input is first viewed as a contiguous (M, N) matrix, N the softmax dim: one row is
one softmax. All arithmetic is fp32, whatever the storage dtype.

Two ways to cover a row, chosen per launch by one meta-parameter, BLOCK (elements a
program holds at once), which the autotuner picks together with num_warps:

  BLOCK >= N  one pass.  The whole row (or BLOCK // next_pow2(N) rows, for short rows) is
              loaded into registers once, reduced and written: N elements read, N written,
              the least traffic there is. Used while the row fits in one program's
              registers (32768 fp32 forward, 16384 backward); past that it would spill.
  BLOCK <  N  looped. The row is walked in BLOCK-wide tiles twice: pass 1 keeps, per lane,
              a running max and a running sum of exponentials rescaled to that max (the
              "online softmax"), so max and sum come from ONE read; pass 2 reads again
              and writes. Pass 2 walks the row back to front: its first tiles are the
              ones pass 1 read last, the likeliest to still be in L2.
              The grid is persistent (each program loops over rows) and sized so that
              every SM keeps about BYTES_IN_FLIGHT_PER_SM of loads outstanding: enough to
              cover memory latency, few enough rows in flight for that L2 reuse to happen.
              Optionally (L2_HINTS, a tuned choice) pass 1 asks L2 to keep what it reads
              and pass 2 to drop what it reads and writes.

Masks are emitted only where a row or the last tile is ragged (NEEDS_MASK), and written so
that loads and stores stay 16-byte vectors whenever N and the row strides allow it (ALIGN:
N = 600 is a multiple of 8, not of 16, which is all Triton would otherwise know).

Autotuning (GPU): @triton.autotune over BLOCK in {256, 512, 1024, 2048} x num_warps in
{2, 4, 8} -- the seed's grid -- plus, for rows longer than 2048, the larger powers of two
up to the one the row needs (with 4..32 warps, 8..64 values a thread), plus six looped
configs with L2 hints. The key is N and `rows_per_sm` (the number of rows each SM gets, a
power of two capped at 64): the same N wants different configs with 64 rows than with
262144. Picks committed by `python -m kernels_triton.tune` (autotune_picks.json, tuned on
one GPU, the sweep's shapes included) are used on that GPU without re-tuning;
`autotune_picks()` reports them and everything tuned since.

Host time (see "launching" below): a call's decisions are made once per distinct launch
and kept as a plan, so a repeated call costs a dict lookup and Triton's launcher, not the
autotuner's and JIT's Python (219 -> 34 us a call on the H100 machine; NOTES.md).

Triton's CPU interpreter (TRITON_INTERPRET=1, read by Triton when a kernel is decorated,
i.e. when this module is imported): the same entry points run, but autotuning needs a
GPU to time configs, so the interpreter uses one config, INTERPRETER_CONFIG, for every
shape; autotune_picks() says so.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
LOG2E = tl.constexpr(1.4426950408889634)  # exp(x) = exp2(x * log2(e)); exp2 is the hardware instruction

SEED_BLOCKS = (256, 512, 1024, 2048)
SEED_WARPS = (2, 4, 8)
LARGE_BLOCKS = (4096, 8192, 16384, 32768)  # for rows above 2048; 32768 is the longest row held in registers
BYTES_IN_FLIGHT_PER_SM = 32 * 1024  # ~ HBM bandwidth x latency / number of SMs on an H100, rounded up
ROWS_PER_SM_CAP = 64
PICKS_FILE = Path(__file__).with_name("autotune_picks.json")


@dataclass(frozen=True)
class SoftmaxConfig:
    """One launch configuration: what the autotuner chooses between.

    block:     elements a program holds at once (a power of two). >= N: one pass over
               whole rows; < N: the looped path with BLOCK-wide tiles.
    num_warps: warps per program (ignored by the interpreter).
    l2_hints:  looped path only: pass 1 loads with L2 eviction priority "evict_last" and
               pass 2 loads and stores with "evict_first", so that the second read of a
               row finds it in L2 more often (the output does not push it out).
    """

    block: int
    num_warps: int = 4
    l2_hints: bool = False

    def __post_init__(self):
        if self.block < 1 or self.block & (self.block - 1):
            raise ValueError(f"block must be a power of two, got {self.block}")
        if self.num_warps not in (1, 2, 4, 8, 16, 32):
            raise ValueError(f"num_warps must be a power of two up to 32, got {self.num_warps}")

    def kwargs(self) -> dict:
        """The meta-parameters and options this config launches with. Every constexpr is
        given, none left to a default: Triton 3.6 failed on a defaulted one that 3.9
        took (NOTES.md, device call 2)."""
        return {"BLOCK": self.block, "L2_HINTS": self.l2_hints, "num_warps": self.num_warps}

    def triton_config(self) -> triton.Config:
        """The same, as the autotuner's triton.Config."""
        return triton.Config({"BLOCK": self.block, "L2_HINTS": self.l2_hints}, num_warps=self.num_warps)

    @classmethod
    def of(cls, config: triton.Config) -> SoftmaxConfig:
        """The SoftmaxConfig of an autotuner config."""
        return cls(config.kwargs["BLOCK"], config.num_warps, config.kwargs["L2_HINTS"])


INTERPRETER_CONFIG = SoftmaxConfig(block=1024, num_warps=4)


def _fits_in_registers(block: int, num_warps: int, arrays: int) -> bool:
    """Whether `arrays` fp32 tiles of `block` values stay in registers: a thread may hold
    64 values and at most half of its register budget (65536 per SM / threads). Checked
    against ptxas for sm_90: the one-pass backward at 32768 (two tiles) spills, the
    one-pass forward at 32768 with 16 warps does not."""
    values = arrays * block // (32 * num_warps)
    return values <= min(64, 1024 // num_warps)


def _gpu_configs() -> list[triton.Config]:
    configs = [SoftmaxConfig(b, w) for b in SEED_BLOCKS for w in SEED_WARPS]
    for block in LARGE_BLOCKS:  # at least 8 values a thread: more warps would only idle
        configs += [SoftmaxConfig(block, w) for w in (4, 8, 16, 32) if block // (32 * w) >= 8]
    # the looped path with L2 hints, for the blocks and warps that looped fastest in the H100 tune
    configs += [
        SoftmaxConfig(b, w, l2_hints=True)
        for b, w in ((2048, 4), (2048, 8), (4096, 8), (4096, 16), (8192, 16), (8192, 32))
    ]
    return [c.triton_config() for c in configs]


GPU_CONFIGS = _gpu_configs()
# Under the interpreter: one config, since choosing between several needs GPU timings.
AUTOTUNE_CONFIGS = [INTERPRETER_CONFIG.triton_config()] if INTERPRET else GPU_CONFIGS


def _pruner(streams: int):
    """early_config_prune for a kernel that reads `streams` tensors: the seed's grid is
    always tried; a larger block only up to the one that holds the row, and only where
    its tiles fit in registers -- `streams` tiles in one pass, three when looped (the
    tile and two per-lane accumulators); L2 hints only where the row loops."""

    def prune(configs, named_args, **kwargs):
        n = named_args["N"]
        row_block = _next_pow2(n)

        def keep(c):
            block = c.kwargs["BLOCK"]
            if c.kwargs["L2_HINTS"]:  # hints act on the looped path only
                return block < n and _fits_in_registers(block, c.num_warps, 3)
            arrays = streams if block >= n else 3
            return block in SEED_BLOCKS or (
                block <= row_block and _fits_in_registers(block, c.num_warps, arrays)
            )

        return [c for c in configs if keep(c)]

    return prune


# The meta-parameters that follow from BLOCK and the shape: computed once per launch plan
# (see _launch), and by triton.heuristics inside the autotuner, from the kernel's named
# arguments. Pointer arguments may be tensors or, when compiling ahead (tune), Triton's
# MockTensor: both have a dtype.
_TILE = {
    # one pass: a [ROWS, BLOCK_N] tile of whole rows; looped: a [1, BLOCK] tile of one row
    "BLOCK_N": lambda a: min(a["BLOCK"], _next_pow2(a["N"])),
    "ROWS": lambda a: a["BLOCK"] // a["BLOCK_N"],
    "ONE_PASS": lambda a: a["BLOCK_N"] >= a["N"],
    # masks cost instructions and registers: emit them only for ragged rows or a ragged last tile
    "NEEDS_MASK": lambda a: (a["N"] % a["BLOCK_N"] != 0) or (a["ONE_PASS"] and a["M"] % a["ROWS"] != 0),
    # the largest run of elements, up to 16 bytes, that N and every row stride are multiples of
    "ALIGN": lambda a: math.gcd(
        a["N"],
        *(v for k, v in a.items() if k.endswith("_row_stride")),
        16 // next(v for k, v in a.items() if k.endswith("_ptr")).dtype.itemsize,
    ),
}


def _next_pow2(n: int) -> int:
    """triton.next_power_of_2 without its constexpr-function wrapper (~10 us a call on the host)."""
    return 1 << (n - 1).bit_length() if n > 1 else 1


def _tile_meta(named_args: dict) -> dict:
    """The kernel's named arguments with BLOCK, plus every _TILE value, computed in order."""
    meta = dict(named_args)
    for name, rule in _TILE.items():
        meta[name] = rule(meta)
    return meta


@triton.jit
def _row_start(ptr, row, row_stride, ALIGN: tl.constexpr):
    """Pointer to the start of row `row` (int64, or a tensor of them): M * stride may pass
    2**31. The hint that the offset is a multiple of ALIGN elements is what lets the
    compiler use 16-byte loads and stores when N is, say, 600 (not a multiple of 16)."""
    return ptr + tl.multiple_of(row * row_stride, ALIGN)


@triton.jit
def _in_row(cols, N, ALIGN: tl.constexpr):
    """cols < N, written so that the compiler sees the mask constant over runs of ALIGN
    lanes (N is a multiple of ALIGN): masked accesses stay vectorised."""
    return cols // ALIGN < N // ALIGN


@triton.jit
def _load_f32(ptrs, mask, other, NEEDS_MASK: tl.constexpr, POLICY: tl.constexpr):
    """tl.load, masked only when the shape needs it, widened to fp32. POLICY: the L2
    eviction priority ("evict_last", "evict_first"; "" the default). No default value
    here: Triton 3.6 does not make a default string argument a constexpr."""
    if NEEDS_MASK:
        x = tl.load(ptrs, mask=mask, other=other, eviction_policy=POLICY)
    else:
        x = tl.load(ptrs, eviction_policy=POLICY)
    return x.to(tl.float32)


@triton.jit
def _store(ptrs, value, mask, NEEDS_MASK: tl.constexpr, POLICY: tl.constexpr):
    """tl.store in the destination's dtype, masked only when the shape needs it."""
    if NEEDS_MASK:
        tl.store(ptrs, value.to(ptrs.dtype.element_ty), mask=mask, eviction_policy=POLICY)
    else:
        tl.store(ptrs, value.to(ptrs.dtype.element_ty), eviction_policy=POLICY)


@triton.jit
def _online_max_sum(m, d, x):
    """One step of the online softmax, lane by lane: m is the running max, d the running
    sum of exp(x - m). When the max grows, the old sum is rescaled to the new max.
    A lane that has seen only -inf keeps d = 0 (exp(-inf - -inf) would be NaN).
    Exponents are written x * log2(e) - m * log2(e): one FFMA an element instead of a
    subtract and a multiply (the -m * log2(e) term is shared, so its rounding scales
    every exponential of a row alike and cancels in the normalisation)."""
    m_new = tl.maximum(m, x)
    shift = tl.where(m_new == float("-inf"), 0.0, m_new) * LOG2E
    d = d * tl.exp2(m * LOG2E - shift) + tl.exp2(x * LOG2E - shift)
    return m_new, d


@triton.jit(do_not_specialize=["rows_per_sm"])
def _softmax_fwd_kernel(
    x_ptr,
    y_ptr,
    x_row_stride,
    y_row_stride,
    M,
    N,
    rows_per_sm,  # not read by the kernel: an argument only so that the autotuner can key on it
    BLOCK: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ROWS: tl.constexpr,
    ONE_PASS: tl.constexpr,
    NEEDS_MASK: tl.constexpr,
    ALIGN: tl.constexpr,
    L2_HINTS: tl.constexpr,
):
    if ONE_PASS:
        # One program, ROWS whole rows: x is a [ROWS, BLOCK_N] tile held in registers.
        rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
        cols = tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < M) & _in_row(cols, N, ALIGN)[None, :]
        x_ptrs = _row_start(x_ptr, rows.to(tl.int64), x_row_stride, ALIGN)[:, None] + cols[None, :]
        x = _load_f32(x_ptrs, mask, float("-inf"), NEEDS_MASK, "")  # -inf: no weight
        m = tl.max(x, axis=1)  # [ROWS]; a row of all -inf gives NaN below, as torch does
        e = tl.exp2(x * LOG2E - (m * LOG2E)[:, None])  # one FFMA + MUFU.EX2 an element
        y = e * (1.0 / tl.sum(e, axis=1))[:, None]
        y_ptrs = _row_start(y_ptr, rows.to(tl.int64), y_row_stride, ALIGN)[:, None] + cols[None, :]
        _store(y_ptrs, y, mask, NEEDS_MASK, "")
    else:
        # Persistent: program p takes rows p, p + P, p + 2P, ... (P = number of programs).
        KEEP: tl.constexpr = "evict_last" if L2_HINTS else ""  # pass 1: read again soon
        DROP: tl.constexpr = "evict_first" if L2_HINTS else ""  # pass 2: last use / written once
        cols = tl.arange(0, BLOCK)
        n_full = N // BLOCK  # full tiles, unmasked; a ragged tail tile follows when NEEDS_MASK
        tail = n_full * BLOCK + cols
        for row in tl.range(tl.program_id(0).to(tl.int64), M, tl.num_programs(0)):
            x_row = _row_start(x_ptr, row, x_row_stride, ALIGN)
            y_row = _row_start(y_ptr, row, y_row_stride, ALIGN)
            # pass 1: running max and sum of exponentials, per lane  -> m, d: [BLOCK]
            m = tl.full([BLOCK], float("-inf"), tl.float32)
            d = tl.zeros([BLOCK], tl.float32)
            for t in range(n_full):
                m, d = _online_max_sum(m, d, _load_f32(x_row + t * BLOCK + cols, None, None, False, KEEP))
            if NEEDS_MASK:
                m, d = _online_max_sum(
                    m, d, _load_f32(x_row + tail, _in_row(tail, N, ALIGN), float("-inf"), True, KEEP)
                )
            # fold the lanes: the row's max, and its sum rescaled to that max; then
            # y = exp(x - max) / sum = 2 ** (x * log2(e) - shift), one FFMA and one EX2
            m_row = tl.max(m, axis=0)
            shift = m_row * LOG2E + tl.log2(tl.sum(d * tl.exp2(m * LOG2E - m_row * LOG2E), axis=0))
            # pass 2, back to front (see the module docstring): normalise and write
            if NEEDS_MASK:
                x = _load_f32(x_row + tail, _in_row(tail, N, ALIGN), 0.0, True, DROP)
                _store(y_row + tail, tl.exp2(x * LOG2E - shift), _in_row(tail, N, ALIGN), True, DROP)
            for i in range(n_full):
                offs = (n_full - 1 - i) * BLOCK + cols
                x = _load_f32(x_row + offs, None, None, False, DROP)
                _store(y_row + offs, tl.exp2(x * LOG2E - shift), None, False, DROP)


@triton.jit(do_not_specialize=["rows_per_sm"])
def _softmax_bwd_kernel(
    y_ptr,
    dy_ptr,
    dx_ptr,
    y_row_stride,
    dy_row_stride,
    dx_row_stride,
    M,
    N,
    rows_per_sm,  # not read by the kernel: an argument only so that the autotuner can key on it
    BLOCK: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ROWS: tl.constexpr,
    ONE_PASS: tl.constexpr,
    NEEDS_MASK: tl.constexpr,
    ALIGN: tl.constexpr,
    L2_HINTS: tl.constexpr,
):
    # dx = y * (dy - <y, dy>): one dot product per row, then an elementwise update.
    if ONE_PASS:
        rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
        cols = tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < M) & _in_row(cols, N, ALIGN)[None, :]
        r = rows.to(tl.int64)
        y = _load_f32(
            _row_start(y_ptr, r, y_row_stride, ALIGN)[:, None] + cols[None, :], mask, 0.0, NEEDS_MASK, ""
        )
        dy = _load_f32(
            _row_start(dy_ptr, r, dy_row_stride, ALIGN)[:, None] + cols[None, :], mask, 0.0, NEEDS_MASK, ""
        )
        dot = tl.sum(y * dy, axis=1)  # [ROWS]
        dx_ptrs = _row_start(dx_ptr, r, dx_row_stride, ALIGN)[:, None] + cols[None, :]
        _store(dx_ptrs, y * (dy - dot[:, None]), mask, NEEDS_MASK, "")
    else:
        KEEP: tl.constexpr = "evict_last" if L2_HINTS else ""  # as in the forward
        DROP: tl.constexpr = "evict_first" if L2_HINTS else ""
        cols = tl.arange(0, BLOCK)
        n_full = N // BLOCK
        tail = n_full * BLOCK + cols
        for row in tl.range(tl.program_id(0).to(tl.int64), M, tl.num_programs(0)):
            y_row = _row_start(y_ptr, row, y_row_stride, ALIGN)
            dy_row = _row_start(dy_ptr, row, dy_row_stride, ALIGN)
            dx_row = _row_start(dx_ptr, row, dx_row_stride, ALIGN)
            # pass 1: per-lane partial dot products, folded once at the end
            acc = tl.zeros([BLOCK], tl.float32)
            for t in range(n_full):
                offs = t * BLOCK + cols
                acc += _load_f32(y_row + offs, None, None, False, KEEP) * _load_f32(
                    dy_row + offs, None, None, False, KEEP
                )
            if NEEDS_MASK:
                in_row = _in_row(tail, N, ALIGN)
                acc += _load_f32(y_row + tail, in_row, 0.0, True, KEEP) * _load_f32(
                    dy_row + tail, in_row, 0.0, True, KEEP
                )
            dot = tl.sum(acc, axis=0)
            # pass 2, back to front, for L2 reuse as in the forward
            if NEEDS_MASK:
                in_row = _in_row(tail, N, ALIGN)
                y = _load_f32(y_row + tail, in_row, 0.0, True, DROP)
                dx = y * (_load_f32(dy_row + tail, in_row, 0.0, True, DROP) - dot)
                _store(dx_row + tail, dx, in_row, True, DROP)
            for i in range(n_full):
                offs = (n_full - 1 - i) * BLOCK + cols
                y = _load_f32(y_row + offs, None, None, False, DROP)
                _store(
                    dx_row + offs,
                    y * (_load_f32(dy_row + offs, None, None, False, DROP) - dot),
                    None,
                    False,
                    DROP,
                )


def _time_config(kernel_call, quantiles):
    """How the autotuner times one config: triton.testing.do_bench (events, L2 cleared
    before each run, median) over ~25 ms instead of its default ~125 ms, so a tune of
    some 600 configs (python -m kernels_triton.tune) fits in a minute."""
    return triton.testing.do_bench(kernel_call, warmup=5, rep=25, quantiles=quantiles)


def _autotuned(kernel, streams: int):
    # cache_results: timings persist in Triton's on-disk cache (keyed on the kernel's source,
    # the configs and the Triton version), so a later process does not time them again.
    return triton.autotune(
        configs=AUTOTUNE_CONFIGS,
        key=["N", "rows_per_sm"],
        cache_results=True,
        do_bench=_time_config,
        prune_configs_by={"early_config_prune": _pruner(streams)},
    )(triton.heuristics(_TILE)(kernel))


# name -> (the kernel with its derived meta-parameters, the same under the autotuner)
KERNELS = {
    "softmax_fwd": (
        triton.heuristics(_TILE)(_softmax_fwd_kernel),
        _autotuned(_softmax_fwd_kernel, streams=1),
    ),
    "softmax_bwd": (
        triton.heuristics(_TILE)(_softmax_bwd_kernel),
        _autotuned(_softmax_bwd_kernel, streams=2),
    ),
}
STREAMS = {"softmax_fwd": 1, "softmax_bwd": 2}  # tensors each kernel reads


# --- picks: committed ones, and what the autotuner chose in this process ----------------


@functools.cache
def _committed() -> dict:
    """autotune_picks.json as written by `python -m kernels_triton.tune` (no picks until run on a GPU)."""
    return json.loads(PICKS_FILE.read_text()) if PICKS_FILE.exists() else {"gpu": None, "picks": []}


@functools.cache
def _committed_index() -> dict:
    """(kernel, N, rows_per_sm, dtype name) -> SoftmaxConfig, from the committed picks."""
    return {
        (p["kernel"], p["N"], p["rows_per_sm"], p["dtype"]): SoftmaxConfig(
            p["block"], p["num_warps"], p.get("l2_hints", False)
        )
        for p in _committed()["picks"]
    }


def _committed_pick(
    kernel: str, n: int, rows_per_sm: int, dtype: torch.dtype, device
) -> SoftmaxConfig | None:
    """The committed pick for this key, or for the same key in another dtype of the same
    size (fp16 takes bf16's: the same bytes, the same fp32 arithmetic); None if there is none."""
    if INTERPRET or _committed()["gpu"] != torch.cuda.get_device_name(device):
        return None  # picks are only good on the GPU they were tuned on
    index = _committed_index()
    for other in (dtype, *(d for d in DTYPES if d != dtype and d.itemsize == dtype.itemsize)):
        pick = index.get((kernel, n, rows_per_sm, _dtype_name(other)))
        if pick is not None:
            return pick
    return None


def autotune_picks() -> dict:
    """Which config won for which (kernel, N, rows_per_sm, dtype): the committed picks
    (used without re-tuning on the GPU they name), every pick the autotuner made in this
    process (read from its cache), and `used`: the config each key's launches actually
    ran with in this process and its source. Under the interpreter: the one config used."""
    tuned = []
    for name, (_, autotuner) in KERNELS.items():
        for key, cfg in autotuner.cache.items():
            n, rows_per_sm, *dtypes = key
            tuned.append(
                {
                    "kernel": name,
                    "N": n,
                    "rows_per_sm": rows_per_sm,
                    "dtype": _dtype_name(dtypes[0]),
                    **_pick_fields(SoftmaxConfig.of(cfg)),
                }
            )
    committed = _committed()
    mode = (
        f"interpreter: autotuning needs a GPU, so every launch uses one config {asdict(INTERPRETER_CONFIG)}"
        if INTERPRET
        else "autotune (GPU)"
    )
    used = [{"kernel": k, "N": n, "rows_per_sm": r, "dtype": d, **cfg} for (k, n, r, d), cfg in _USED.items()]
    return {"mode": mode, "committed": committed, "autotuned": tuned, "used": used}


def _config_label(config: SoftmaxConfig) -> str:
    """BLOCK/num_warps[/L2], as the tune log and the picks' timings name a config."""
    return f"{config.block}/{config.num_warps}" + ("/L2" if config.l2_hints else "")


def _pick_fields(config: SoftmaxConfig) -> dict:
    """A config as autotune_picks.json records it (l2_hints only where set)."""
    fields = {"block": config.block, "num_warps": config.num_warps}
    return {**fields, "l2_hints": True} if config.l2_hints else fields


def _dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


# --- launching -------------------------------------------------------------------------
#
# Host time matters as much as device time here: at 4096 x 600 the kernel runs ~7 us, and
# a launch through the autotuner, its heuristics and Triton's argument binding costs
# Python ~100-200 us. So every decision a launch needs (the config, the meta-parameters,
# the grid, the compiled kernel) is made once per distinct launch -- kernel, shape,
# strides, dtype, device, pointer alignment, config -- and kept as a "plan": a closure
# that calls the compiled kernel's launcher with every scalar argument already bound.
# A call then costs a dict lookup and the launch itself (NOTES.md has the numbers).


@functools.cache
def _num_sms(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 1  # the interpreter runs programs one after another


def _rows_per_sm(M: int, device: torch.device) -> int:
    n_sms = _num_sms(device)
    return min(ROWS_PER_SM_CAP, _next_pow2((M + n_sms - 1) // n_sms))


def _grid(meta: dict, n_sms: int, column_bytes: int) -> tuple[int]:
    """One program per ROWS rows in one pass; looped, a persistent grid with about
    BYTES_IN_FLIGHT_PER_SM of tiles per SM (see the module docstring). column_bytes:
    what one tile column loads, the element size times the tensors read."""
    M = meta["M"]
    if meta["ONE_PASS"]:
        return ((M + meta["ROWS"] - 1) // meta["ROWS"],)
    programs_per_sm = max(1, BYTES_IN_FLIGHT_PER_SM // (meta["BLOCK"] * column_bytes))
    return (min(M, n_sms * programs_per_sm),)


_PLANS: dict[tuple, Callable[[list[torch.Tensor], list[int]], None]] = {}
# (kernel, N, rows_per_sm, dtype) -> the config its launches ran with in this process, and
# where it came from ("committed", "autotuned" or "given"): what autotune_picks() reports
_USED: dict[tuple, dict] = {}
MAX_PLANS = 4096  # distinct launches remembered; past that the cache starts afresh


def _launch(
    name: str,
    tensors: list[torch.Tensor],
    M: int,
    N: int,
    config: SoftmaxConfig | None = None,
    use_committed: bool = True,
) -> None:
    """Launch one of KERNELS on 2D tensors (M, N) with unit column stride; the first
    tensor's dtype keys the picks, the last tensor is the output. The config is, in
    order: `config`, the committed pick for this GPU, the autotuner's."""
    x = tensors[0]
    pointers = [t.data_ptr() for t in tensors]
    # everything the compiled kernel was specialised on: Triton specialises integer
    # arguments on == 1 and % 16, pointers on 16-byte alignment; the values themselves
    # are in the key, so one plan serves exactly the launches it was made for
    key = (
        name,
        M,
        N,
        config,
        use_committed,
        x.dtype,
        x.get_device(),
        *[t.stride(0) for t in tensors],
        *[p % 16 for p in pointers],
    )
    plan = _PLANS.get(key)
    if plan is not None:
        plan(tensors, pointers)
        return
    if len(_PLANS) >= MAX_PLANS:
        _PLANS.clear()
    _PLANS[key] = _first_launch(name, tensors, M, N, config, use_committed)


def _first_launch(
    name: str, tensors: list[torch.Tensor], M: int, N: int, config: SoftmaxConfig | None, use_committed: bool
) -> Callable[[list[torch.Tensor], list[int]], None]:
    """Choose the config, compile and launch through Triton's usual path (the autotuner
    when nothing else decides), then return the plan for the next identical launch: a
    function of the tensors and their data pointers."""
    kernel, autotuner = KERNELS[name]
    x = tensors[0]
    args = [*tensors, *(t.stride(0) for t in tensors), M, N, _rows_per_sm(M, x.device)]
    grid = functools.partial(_grid, n_sms=_num_sms(x.device), column_bytes=x.element_size() * STREAMS[name])
    source = "given" if config is not None else "committed"
    if config is None and use_committed and x.device.type == "cuda":
        config = _committed_pick(name, N, args[-1], x.dtype, x.device)
    if config is None:
        compiled = autotuner[grid](*args)
        config, source = SoftmaxConfig.of(autotuner.best_config), "interpreter" if INTERPRET else "autotuned"
    else:
        compiled = kernel[grid](*args, **config.kwargs())
    _USED[(name, N, args[-1], _dtype_name(x.dtype))] = {**_pick_fields(config), "source": source}
    meta = _tile_meta({**dict(zip(kernel.arg_names, args)), **config.kwargs()})
    bound = [meta[arg] for arg in kernel.arg_names[len(tensors) :]]  # every argument after the tensors
    program_grid = (*grid(meta), 1, 1)  # (x, y, z): the compiled kernel's launcher wants all three
    if INTERPRET:  # no compiled kernel: the interpreter runs the Python function on the tensors
        return lambda tensors, pointers: kernel.fn[program_grid](*tensors, *bound)
    # The launcher of this compiled kernel with the grid bound (the same object in Triton
    # 3.2-3.9). Pointers go in as integers, which Triton's launcher takes as they are; a
    # tensor would cost a data_ptr() call and a cuPointerGetAttribute check each.
    launch = compiled[program_grid]
    return lambda tensors, pointers: launch(*pointers, *bound)


class SoftmaxDimError(IndexError, ValueError):
    """A dim out of range: an IndexError as in torch, and a ValueError as a bad argument."""


def _check(x, dim, what: str) -> int:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in DTYPES:
        raise TypeError(
            f"{what} has dtype {x.dtype}; Triton softmax takes {', '.join(map(_dtype_name, DTYPES))}"
        )
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    ndim = max(x.dim(), 1)  # a 0-d tensor is softmaxed as one element, dim 0 or -1, like torch
    if not -ndim <= dim < ndim:
        raise SoftmaxDimError(
            f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})"
        )
    if not x.is_cuda and not INTERPRET:
        raise ValueError(
            f"{what} is on {x.device}, and Triton kernels run on CUDA devices. To run them on the CPU "
            "under Triton's interpreter, set TRITON_INTERPRET=1 before triton is imported."
        )
    return dim % ndim


def _rows(t: torch.Tensor, dim: int) -> torch.Tensor:
    """t with `dim` moved last, as a 2D (M, N) view with unit column stride (a copy only
    when the softmax dim is not already the innermost, contiguous one)."""
    t = t.reshape(1) if t.dim() == 0 else t
    t = t.movedim(dim, -1)
    rows = t.reshape(math.prod(t.shape[:-1]), t.shape[-1])
    return rows if rows.stride(-1) == 1 else rows.contiguous()


def _from_rows(rows: torch.Tensor, like: torch.Tensor, dim: int) -> torch.Tensor:
    """Inverse of _rows: (M, N) back to `like`'s shape with the softmax dim in place."""
    if like.dim() == 0:
        return rows.reshape(())
    return rows.reshape(like.movedim(dim, -1).shape).movedim(-1, dim)


def _as_rows(t: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor as its (M, N) rows, N its last dim: a view, no copy."""
    return t if t.dim() == 2 else t.view(-1, t.shape[-1])


def _forward(x: torch.Tensor, dim: int, config: SoftmaxConfig | None, launch: bool = True) -> torch.Tensor:
    """y = softmax(x, dim). launch=False allocates y with the layout a launch would give it
    and computes nothing: the custom op's fake (shape-only) version, for tracing."""
    if dim == x.dim() - 1 and x.is_contiguous():  # the usual case, kept short: rows are already (M, N)
        y = torch.empty_like(x)
        if y.numel() and launch:
            x2, y2 = _as_rows(x), _as_rows(y)
            _launch("softmax_fwd", [x2, y2], x2.shape[0], x2.shape[1], config)
        return y
    x2 = _rows(x, dim)
    y2 = torch.empty(x2.shape, dtype=x.dtype, device=x.device)
    if x2.numel() and launch:
        _launch("softmax_fwd", [x2, y2], *x2.shape, config)
    return _from_rows(y2, x, dim)


def _backward(
    y: torch.Tensor, dy: torch.Tensor, dim: int, config: SoftmaxConfig | None, launch: bool = True
) -> torch.Tensor:
    """dx from y and dy along dim; launch=False as in _forward."""
    if dy.dtype != y.dtype:
        dy = dy.to(y.dtype)
    if dim == y.dim() - 1 and y.is_contiguous() and dy.is_contiguous():  # as in _forward
        dx = torch.empty_like(y)
        if dx.numel() and launch:
            y2 = _as_rows(y)
            _launch("softmax_bwd", [y2, _as_rows(dy), _as_rows(dx)], y2.shape[0], y2.shape[1], config)
        return dx
    y2, dy2 = _rows(y, dim), _rows(dy, dim)
    dx2 = torch.empty(y2.shape, dtype=y.dtype, device=y.device)
    if y2.numel() and launch:
        _launch("softmax_bwd", [y2, dy2, dx2], *y2.shape, config)
    return _from_rows(dx2, y, dim)


# --- under torch.compile and torch.export ----------------------------------------------
#
# A tracer cannot look inside a launch (it reads data pointers of tensors that have none
# while tracing), so while a graph is being traced softmax is one opaque custom op,
# kernels_triton::softmax, with a shape-only fake and its backward as a second op. Eager
# calls skip the op: its dispatch costs ~25 us of host time, as much as the launch.


@torch.library.custom_op("kernels_triton::softmax", mutates_args=())
def _softmax_op(x: torch.Tensor, dim: int) -> torch.Tensor:
    return _forward(x, dim, None)


@_softmax_op.register_fake
def _(x, dim):
    return _forward(x, dim, None, launch=False)


@torch.library.custom_op("kernels_triton::softmax_backward", mutates_args=())
def _softmax_backward_op(y: torch.Tensor, dy: torch.Tensor, dim: int) -> torch.Tensor:
    return _backward(y, dy, dim, None)


@_softmax_backward_op.register_fake
def _(y, dy, dim):
    return _backward(y, dy, dim, None, launch=False)


def _op_setup_context(ctx, inputs, output):
    ctx.dim = inputs[1]
    ctx.save_for_backward(output)


def _op_backward(ctx, dy):
    (y,) = ctx.saved_tensors
    return _softmax_backward_op(y, dy, ctx.dim), None


_softmax_op.register_autograd(_op_backward, setup_context=_op_setup_context)


class _Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, config):
        y = _forward(x, dim, config)
        ctx.save_for_backward(y)
        ctx.dim, ctx.config = dim, config
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        return _backward(y, dy, ctx.dim, ctx.config), None, None


def softmax(x: torch.Tensor, dim: int = -1, *, config: SoftmaxConfig | None = None) -> torch.Tensor:
    """softmax(x, dim) with Triton kernels forward and backward (autograd works).

    x: fp32, fp16 or bf16, any shape, layout and device the kernels can reach (CUDA, or the
    CPU under TRITON_INTERPRET=1); the result has x's dtype and shape. Rows of all -inf
    give NaN, as in torch. `config` forces one launch configuration (both directions)
    instead of the committed pick or the autotuner; under the interpreter the default is
    the single INTERPRETER_CONFIG. Under torch.compile or torch.export it is one opaque
    op, kernels_triton::softmax (forward and backward), so graphs that use it trace.
    """
    dim = _check(x, dim, "x")
    if config is None and torch.compiler.is_compiling():  # traced: the opaque op (see above)
        return _softmax_op(x, dim)
    if x.requires_grad and torch.is_grad_enabled():
        return _Softmax.apply(x, dim, config)
    return _forward(x, dim, config)  # no graph to record: skip autograd's bookkeeping (~10 us)


def softmax_backward(
    y: torch.Tensor, dy: torch.Tensor, dim: int = -1, *, config: SoftmaxConfig | None = None
) -> torch.Tensor:
    """The backward alone: dx = y * (dy - sum(y * dy, dim)) from the forward's output y."""
    dim = _check(y, dim, "y")
    _check(dy, dim, "dy")
    if dy.shape != y.shape:
        raise ValueError(f"dy has shape {tuple(dy.shape)}, y has {tuple(y.shape)}: they must match")
    if dy.device != y.device:
        raise ValueError(f"dy is on {dy.device}, y on {y.device}: they must be on one device")
    if config is None and torch.compiler.is_compiling():
        return _softmax_backward_op(y, dy, dim)
    return _backward(y, dy, dim, config)


# --- tuning ------------------------------------------------------------------------------


def _compile_ahead(job: tuple) -> None:
    """Compile one (kernel, dtype, M, N, config) into Triton's on-disk cache without
    launching it: run in worker processes by tune(), so that the autotuner afterwards
    finds every config compiled. The arguments mirror a launch on contiguous (M, N)
    tensors (MockTensors stand for them), so the cache key is the one the launch computes."""
    name, dtype_name, M, N, config_kwargs = job
    kernel = KERNELS[name][0]
    n_tensors = STREAMS[name] + 1
    kernel.warmup(
        *[getattr(torch, dtype_name)] * n_tensors, *[N] * n_tensors, M, N, 1, grid=(1,), **config_kwargs
    )


def _compile_all(jobs: list[tuple], workers: int | None = None) -> None:
    """_compile_ahead over `jobs` in parallel processes (Triton compiles one kernel at a
    time per process, ~0.3 s each: 600 configs would take minutes in one)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    workers = min(len(jobs), workers or os.cpu_count() or 1, 16)
    if workers < 2:
        return  # not worth the processes: the autotuner compiles as it goes
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_compile_ahead, jobs, chunksize=4))


def tune(
    tasks, device="cuda", workers: int | None = None, progress: Callable[[list[dict]], None] | None = None
) -> list[dict]:
    """Autotune forward and backward afresh at each (M, N, dtype) of `tasks`, ignoring
    committed picks, and return the winners in autotune_picks.json's format, each with
    every config's time (timings_us, fastest first). `progress` gets the picks so far
    after each task."""
    if INTERPRET or not torch.cuda.is_available():
        raise RuntimeError("tuning needs a CUDA device, with TRITON_INTERPRET unset")
    device = torch.device(device)
    keys, unique = set(), []  # one task per autotuner key: (65536, 600) and (262144, 600) share one
    for M, N, dtype in tasks:
        if (N, _rows_per_sm(M, device), dtype) not in keys:
            keys.add((N, _rows_per_sm(M, device), dtype))
            unique.append((M, N, dtype))
    tasks = unique
    jobs = [
        (name, _dtype_name(dtype), M, N, c.all_kwargs())
        for M, N, dtype in tasks
        for name in KERNELS
        for c in _pruner(STREAMS[name])(GPU_CONFIGS, {"N": N})
    ]
    _compile_all(jobs, workers)
    picks = []
    for M, N, dtype in tasks:
        x = torch.randn(M, N, device=device, dtype=dtype)
        y, dy, dx = torch.empty_like(x), torch.randn_like(x), torch.empty_like(x)
        for name, tensors in (("softmax_fwd", [x, y]), ("softmax_bwd", [y, dy, dx])):
            autotuner = KERNELS[name][1]
            key = (N, _rows_per_sm(M, device), *(str(t.dtype) for t in tensors))
            autotuner.cache.pop(key, None)
            autotuner.configs_timings = {}
            _first_launch(name, tensors, M, N, config=None, use_committed=False)
            timings = sorted(
                (
                    (t[0] if isinstance(t, (list, tuple)) else t, SoftmaxConfig.of(c))
                    for c, t in autotuner.configs_timings.items()
                ),
                key=lambda tc: tc[0],
            )
            picks.append(
                {
                    "kernel": name,
                    "N": N,
                    "rows_per_sm": key[1],
                    "dtype": _dtype_name(dtype),
                    **_pick_fields(SoftmaxConfig.of(autotuner.cache[key])),
                    "tuned_at": [M, N],
                    "configs_tried": len(timings),
                    "timings_us": {_config_label(c): round(1e3 * t, 1) for t, c in timings},
                }
            )
        if progress is not None:
            progress(picks)
    return picks
