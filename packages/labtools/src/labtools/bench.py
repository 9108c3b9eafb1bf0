"""The one timing harness. Every number kernel-lab prints comes from `measure` or `bench`.

Two times are taken of every implementation at every point, because users feel both:

- **device time** (`median_us`, CUDA): each timed launch is bracketed by device events on
  the current stream, after a write of a buffer larger than L2 (so the launch starts with a
  cold cache, as it would inside a model that touched other tensors in between) and with
  its inputs rotated among several copies when one copy would fit in L2. Before each start
  event the GPU is kept busy (a spin kernel) for twice the host time one call takes to
  issue, so the timed span holds the kernels and not a GPU waiting on Python; functions
  timed in turns all wait as long as the slowest to issue needs (that wait moves a launch of
  a few microseconds by up to 3%: measurements/2026-11-27-h100/lead-spin/). Timing
  repeats in batches until the interquartile range is within `rel_iqr_target` of the
  median or a time cap is hit, and reports the median. Implementations compared at one
  point are timed in turns (`time_in_turns`): a machine's drift over a sweep, or what one
  implementation leaves behind for the next, falls on all of them alike.
- **call time** (`call_us`): wall time per call with calls issued back to back, as in a
  user's loop, synchronized only at the end of each block of calls: host overhead
  (argument checks, launch plans, autotuner dispatch) shows here and not in device time.

On the CPU there is no asynchronous device, so one measurement gives both: the blocked
method below (`time_blocks`), the same for every CPU figure. The thread count of torch's
intra-op pool is fixed for the measurement (`measure`: DEFAULT_CPU_THREADS) and recorded; blocks of calls are sized so one
block takes at least `min_block_s` (timer and scheduler noise averaged over many calls);
warm-up blocks run until two in a row agree within `WARM_TOLERANCE`; then blocks repeat
until their spread is within `rel_iqr_target` or the time cap. The median of the
per-call times of the blocks is the figure.

Any figure whose spread (IQR / median) exceeds `UNSTABLE_REL_IQR` is marked unstable in
its record (`unstable`, `unstable_why`): tables flag it and reports never headline it.

Events come from torch when it is importable (it is wherever a kernel here runs) and
from CuPy otherwise.

Over 400 lines because GPU timing, CPU timing and call timing share one record type and one
stopping rule; splitting them would put the rules that make the figures comparable in three places.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from labtools.ops import softmax_ref
from labtools.registry import Implementation

DEFAULT_FLUSH_BYTES = 256 * 1024**2  # > 4x the L2 of any current GPU (H100: 50 MB)
UNSTABLE_REL_IQR = 0.10  # IQR / median above this: the figure is marked unstable, never headlined
WARM_TOLERANCE = 0.10  # warm-up ends when two blocks in a row agree within this (relative)
# torch's intra-op threads while `measure` times a CPU implementation. One thread: on a
# machine whose cores are shared (CI, a laptop running other work) an OpenMP region waits
# at its barrier for a descheduled sibling thread and one call can take 100x longer; a
# single thread gives the same figure wherever the point appears. Recorded in each record.
DEFAULT_CPU_THREADS = 1


# --- statistics --------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """Per-call times of one function, in microseconds."""

    samples_us: tuple[float, ...]
    device: str
    flushed_l2: bool = False
    n_input_sets: int = 1
    calls_per_sample: int = 1  # blocked timing: each sample is a block's wall time / its calls
    threads: int | None = None  # torch's intra-op thread count, fixed while timing on the CPU
    warmup_blocks: int = 0

    @property
    def n(self) -> int:
        return len(self.samples_us)

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_us)

    @property
    def q1_us(self) -> float:
        return float(np.percentile(self.samples_us, 25))

    @property
    def q3_us(self) -> float:
        return float(np.percentile(self.samples_us, 75))

    @property
    def iqr_us(self) -> float:
        return self.q3_us - self.q1_us

    @property
    def rel_iqr(self) -> float:
        m = self.median_us
        return self.iqr_us / m if m > 0 else math.inf

    @property
    def min_us(self) -> float:
        return min(self.samples_us)


def _settled(samples: Sequence[float], min_reps: int, rel_iqr_target: float) -> bool:
    if len(samples) < min_reps:
        return False
    q1, med, q3 = np.percentile(samples, [25, 50, 75])
    return med > 0 and (q3 - q1) / med <= rel_iqr_target


# --- CUDA clock ----------------------------------------------------------------------


class _CudaClock:
    """Events, synchronize and an L2-flush buffer from torch, or from CuPy without it."""

    def __init__(self, flush_bytes: int):
        try:
            import torch

            if not torch.cuda.is_available():
                raise ImportError
            self._torch = torch
            self._flush = torch.empty(flush_bytes, dtype=torch.int8, device="cuda") if flush_bytes else None
        except ImportError:
            import cupy

            self._torch = None
            self._cupy = cupy
            self._flush = cupy.empty(flush_bytes, dtype=cupy.int8) if flush_bytes else None

    def event(self):
        if self._torch is not None:
            return self._torch.cuda.Event(enable_timing=True)
        return self._cupy.cuda.Event()

    def record(self, ev):
        if self._torch is not None:
            ev.record()
        else:
            ev.record(self._cupy.cuda.get_current_stream())

    def elapsed_ms(self, start, end) -> float:
        if self._torch is not None:
            return start.elapsed_time(end)
        return self._cupy.cuda.get_elapsed_time(start, end)

    def synchronize(self):
        if self._torch is not None:
            self._torch.cuda.synchronize()
        else:
            self._cupy.cuda.get_current_stream().synchronize()

    def flush_l2(self):
        if self._flush is not None:
            self._flush.zero_() if self._torch is not None else self._flush.fill(0)

    def cycles_per_us(self) -> float:
        """SM clock cycles per microsecond, read off a spin kernel (torch only; 0 without)."""
        if self._torch is None:
            return 0.0
        start, end = self.event(), self.event()
        self._torch.cuda._sleep(1000)  # load the spin kernel
        self.record(start)
        self._torch.cuda._sleep(2_000_000)
        self.record(end)
        self.synchronize()
        return 2_000_000 / (1e3 * self.elapsed_ms(start, end))

    def busy(self, cycles: int):
        """Keep the stream busy for `cycles` SM cycles, so the host can run ahead."""
        if self._torch is not None and cycles > 0:
            self._torch.cuda._sleep(cycles)


def lead_cycles(issue_s: Sequence[float], cycles_per_us: float) -> int:
    """How long to keep the GPU busy before a timed launch: twice the slowest host issue
    time seen during warm-up, in SM cycles."""
    return int(2 * max(issue_s, default=0.0) * 1e6 * cycles_per_us)


def warm_up(
    fn: Callable, arg_sets: Sequence[tuple], synchronize: Callable[[], None], warmup: int = 3
) -> None:
    """Calls before any timing, every input set at least once: compile, autotune, load modules, page in."""
    for i in range(max(warmup, len(arg_sets))):
        fn(*arg_sets[i % len(arg_sets)])
    synchronize()


def host_issue_s(
    fn: Callable, arg_sets: Sequence[tuple], synchronize: Callable[[], None], warmup: int = 3
) -> list[float]:
    """Host time of three calls of `fn`, each issued with the GPU idle, after `warm_up`."""
    warm_up(fn, arg_sets, synchronize, warmup)
    issue_s = []
    for i in range(3):
        t0 = time.perf_counter()
        fn(*arg_sets[i % len(arg_sets)])
        issue_s.append(time.perf_counter() - t0)
        synchronize()
    return issue_s


def time_cuda(
    fn: Callable,
    arg_sets: Sequence[tuple],
    *,
    warmup: int = 3,
    min_reps: int = 25,
    max_reps: int = 1000,
    batch: int = 25,
    time_cap_s: float = 3.0,
    rel_iqr_target: float = 0.02,
    flush_bytes: int = DEFAULT_FLUSH_BYTES,
    lead_s: float | None = None,
) -> Timing:
    """Time `fn(*args)` on the current CUDA stream, cycling through `arg_sets`. `lead_s`: how
    long the GPU spins before each timed launch (default: twice `fn`'s slowest host issue)."""
    clock = _CudaClock(flush_bytes)
    cycles_per_us = clock.cycles_per_us()
    if lead_s is None:  # the host issue time, GPU idle, bounds the wait from above
        lead = lead_cycles(host_issue_s(fn, arg_sets, clock.synchronize, warmup), cycles_per_us)
    else:  # the caller measured it (time_in_turns: the slowest of several functions)
        warm_up(fn, arg_sets, clock.synchronize, warmup)
        lead = int(lead_s * 1e6 * cycles_per_us)
    samples: list[float] = []
    t_end = time.perf_counter() + time_cap_s
    i = 0
    while len(samples) < max_reps:
        pairs = []
        for _ in range(batch):
            clock.flush_l2()
            clock.busy(lead)
            start, end = clock.event(), clock.event()
            clock.record(start)
            fn(*arg_sets[i % len(arg_sets)])
            clock.record(end)
            pairs.append((start, end))
            i += 1
        clock.synchronize()
        samples.extend(1e3 * clock.elapsed_ms(s, e) for s, e in pairs)
        if _settled(samples, min_reps, rel_iqr_target) or time.perf_counter() > t_end:
            break
    return Timing(tuple(samples), "cuda", flushed_l2=bool(flush_bytes), n_input_sets=len(arg_sets))


# --- blocked timing: call time, and every CPU figure -----------------------------------


def _no_sync() -> None:
    pass


@contextlib.contextmanager
def fixed_threads(threads: int | None = None) -> Iterator[int | None]:
    """Hold torch's intra-op thread count at `threads` (default: its current count) while
    timing, and yield it for the record; None when torch is not loaded (NumPy alone runs
    single-threaded here: its softmax uses no BLAS)."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield None
        return
    before = torch.get_num_threads()
    n = threads or before
    torch.set_num_threads(n)
    try:
        yield n
    finally:
        torch.set_num_threads(before)


def time_blocks(
    fn: Callable,
    arg_sets: Sequence[tuple],
    *,
    device: str = "cpu",
    synchronize: Callable[[], None] = _no_sync,
    min_block_s: float = 0.01,
    max_calls_per_block: int = 100_000,
    max_warmup_blocks: int = 10,
    min_reps: int = 5,
    max_reps: int = 200,
    time_cap_s: float = 1.0,
    rel_iqr_target: float = 0.05,
    threads: int | None = None,
    warmup: int | None = None,
    calls_per_block: int | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    """Wall time per call, calls back to back, `synchronize()` once at the end of each block.

    1. Block size: calls per block double from 1 until one block takes `min_block_s`
       (or `calls_per_block`, given).
    2. Warm-up: blocks until two in a row agree within WARM_TOLERANCE (at most
       `max_warmup_blocks`, and at most a quarter of the time cap).
    3. Blocks until at least `min_reps` of them have an IQR within `rel_iqr_target` of
       their median, `max_reps` blocks, or `time_cap_s`.
    Each sample is one block's time divided by its calls, in microseconds.

    `warmup=N` replaces steps 1-2 by exactly N plain calls and blocks of one call (unless
    `calls_per_block`): `warmup=0` times the very first calls, for first-call latency.
    Long because the warm-up, block sizing and stopping rule must read as one procedure.
    """
    k = len(arg_sets)

    def block(n: int) -> float:
        synchronize()
        t0 = clock()
        for i in range(n):
            fn(*arg_sets[i % k])
        synchronize()
        return clock() - t0

    pool = fixed_threads(threads) if device == "cpu" else contextlib.nullcontext(None)
    with pool as n_threads:
        t_start = clock()
        if warmup is not None:
            block(warmup)
            number, warm, max_warmup_blocks = calls_per_block or 1, 0, 0
        elif calls_per_block:
            number, took, warm = calls_per_block, block(calls_per_block), 0
        else:
            number, took, warm = 1, block(1), 0  # the first call also loads, compiles, pages in
            while took < min_block_s and number < max_calls_per_block:
                number = min(max_calls_per_block, number * 2)
                took = block(number)
        previous = math.inf if warmup is not None else took / number
        while warm < max_warmup_blocks and clock() - t_start < time_cap_s / 4:
            per_call = block(number) / number
            warm += 1
            if abs(per_call - previous) <= WARM_TOLERANCE * min(per_call, previous):
                break
            previous = per_call
        samples: list[float] = []
        t_end = clock() + time_cap_s
        while len(samples) < max_reps:
            samples.append(1e6 * block(number) / number)
            if _settled(samples, min_reps, rel_iqr_target) or (
                clock() > t_end and len(samples) >= min(3, min_reps)
            ):
                break
    return Timing(
        tuple(samples),
        device,
        n_input_sets=k,
        calls_per_sample=number,
        threads=n_threads,
        warmup_blocks=warm,
    )


def time_cpu(
    fn: Callable,
    arg_sets: Sequence[tuple],
    *,
    min_reps: int = 10,
    max_reps: int = 200,
    time_cap_s: float = 1.0,
    rel_iqr_target: float = 0.05,
    threads: int | None = None,
    **kw,
) -> Timing:
    """Time `fn(*args)` on the host: `time_blocks`, the one CPU method (see the module doc)."""
    return time_blocks(
        fn,
        arg_sets,
        device="cpu",
        min_reps=min_reps,
        max_reps=max_reps,
        time_cap_s=time_cap_s,
        rel_iqr_target=rel_iqr_target,
        threads=threads,
        **kw,
    )


def time_call(fn: Callable, arg_sets: Sequence[tuple], device: str, **kw) -> Timing:
    """Call time: wall time per call, back to back, synchronized at the end of each block
    (on CUDA the device's queue is drained by `synchronize`, so a block's time includes
    every kernel it launched)."""
    if device != "cuda":
        return time_cpu(fn, arg_sets, **kw)
    clock = _CudaClock(flush_bytes=0)
    return time_blocks(fn, arg_sets, device="cuda-call", synchronize=clock.synchronize, **kw)


def _turn_order(items: Sequence, round_index: int) -> Sequence:
    """The order of one round of timing in turns: as given, reversed every other round, so that
    no function always runs first or right after the same one."""
    return items[:: 1 if round_index % 2 == 0 else -1]


def time_calls_taking_turns(
    fns: dict[str, Callable[[], object]],
    calls: int,
    rounds: int,
    *,
    synchronize: Callable[[], None] = _no_sync,
    warmup: int = 20,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Call time of several functions side by side, for ratios between them: `rounds`
    rounds, in each of which every function runs `calls` calls back to back, synchronized at
    the end, the order reversed every other round (a drift of the host's speed, and the place
    in a round, hit them alike). Returns each function's wall time per call, in us, a round."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    order = list(fns.items())
    for r in range(rounds):
        for name, fn in _turn_order(order, r):
            synchronize()
            start = clock()
            for _ in range(calls):
                fn()
            synchronize()
            times[name].append((clock() - start) / calls * 1e6)
    return times


def paired_ratio(times: dict[str, list[float]], name: str, ref: str) -> float:
    """Median over the rounds of `time_calls_taking_turns` of name's time over ref's in the
    same round: the host's drift between rounds cancels, as it does not in a ratio of medians."""
    return statistics.median(a / b for a, b in zip(times[name], times[ref], strict=True))


def time_fn(fn: Callable, arg_sets: Sequence[tuple], device: str, **kw) -> Timing:
    return (time_cuda if device == "cuda" else time_cpu)(fn, arg_sets, **kw)


def merged(timings: Sequence[Timing]) -> Timing:
    """One Timing from several timings of the same function: all their samples."""
    return replace(
        timings[0],
        samples_us=tuple(v for t in timings for v in t.samples_us),
        warmup_blocks=sum(t.warmup_blocks for t in timings),
    )


def time_in_turns(
    runs: Sequence[tuple[Callable, Sequence[tuple]]],
    device: str,
    rounds: int,
    *,
    time_cap_s: float = 1.0,
    **kw,
) -> list[Timing | Exception]:
    """`time_fn` of several functions (each with its own input sets) side by side: `rounds`
    rounds, each timing every function for time_cap_s / rounds, the order reversed every other
    round; on CUDA every function waits as long before its launches (`time_cuda`'s lead_s).
    Timed one after another, one kernel came out faster in its place in a sweep than
    alone or in turns, by more than the gaps the sweep was run to find (measurements/
    2026-11-27-h100/final-check-6/README.md); in turns, whatever a place gives falls on every
    function alike. Returns each function's samples of all rounds, or the exception it raised
    (it is not timed again)."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    done: list[list[Timing] | Exception] = [[] for _ in runs]
    if device == "cuda":  # one wait before every timed launch: the slowest function's
        synchronize, issue = _CudaClock(0).synchronize, [0.0]
        for i, (fn, arg_sets) in enumerate(runs):
            try:
                issue += host_issue_s(fn, arg_sets, synchronize)
            except Exception as exc:  # noqa: BLE001 - the caller records it against this function
                done[i] = exc
        kw["lead_s"] = 2 * max(issue)
    for r in range(rounds):
        for i in _turn_order(range(len(runs)), r):
            if isinstance(done[i], Exception):
                continue
            fn, arg_sets = runs[i]
            try:
                done[i].append(time_fn(fn, arg_sets, device, time_cap_s=time_cap_s / rounds, **kw))
            except Exception as exc:  # noqa: BLE001 - the caller records it against this function
                done[i] = exc
    return [d if isinstance(d, Exception) else merged(d) for d in done]


# --- inputs ------------------------------------------------------------------------


def l2_bytes() -> int:
    """L2 size of the current CUDA device (0 without one)."""
    try:
        import torch

        if torch.cuda.is_available():
            return int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 * 2**20))
    except ImportError:
        pass
    return 0


def n_input_sets(bytes_per_call: int, l2: int, cap: int = 16) -> int:
    """How many copies of the inputs to rotate through so that no copy is still in L2
    when it comes round again: enough to cover twice the L2 (1 when one call already
    moves more than that)."""
    if l2 <= 0 or bytes_per_call <= 0:
        return 1
    return max(1, min(cap, math.ceil(2 * l2 / bytes_per_call)))


def make_inputs(impl: Implementation, shape: tuple[int, ...], dtype: str, seed: int = 0) -> tuple:
    """Fresh standard-normal inputs for `impl` (torch tensors, or NumPy for numpy impls).

    softmax_backward's first input is y, a softmax output: its rows are made
    distributions (softmax of normals), as they are in a real backward pass, so sums
    like sum(y * dy) stay in the range the tolerances are stated for.
    """
    n = impl.op_model.n_inputs
    as_probs = impl.op == "softmax_backward"
    if impl.backend == "numpy":
        rng = np.random.default_rng(seed)
        xs = [rng.standard_normal(shape) for _ in range(n)]
        if as_probs:
            xs[0] = softmax_ref(xs[0])
        return tuple(x.astype(dtype) for x in xs)
    import torch

    g = torch.Generator(device=impl.device).manual_seed(seed)
    xs = [torch.randn(shape, generator=g, device=impl.device, dtype=torch.float32) for _ in range(n)]
    if as_probs:
        xs[0] = torch.softmax(xs[0], dim=-1)
    return tuple(x.to(getattr(torch, dtype)) for x in xs)


def itemsize(dtype: str) -> int:
    return {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}[dtype]


# --- records -----------------------------------------------------------------------


@dataclass
class BenchRecord:
    """One implementation at one shape and dtype.

    median_us:  device time (CUDA events, L2 flushed, median); on the CPU the blocked
                wall time per call, which is also its call time.
    call_us:    call time: wall per call, back to back, synchronized at the end (median
                of blocks); None in records written before it was measured.
    gbps:       compulsory bytes (op's model) / median device time.
    frac_of_copy: gbps / the copy ceiling measured in the same run (None if not given).
    vs_ref:     reference median / this median: 1.0 is as fast as the reference, 2.0
                twice as fast (None if no reference was timed); call_vs_ref: the same
                for call time.
    threads:    torch's intra-op thread count during a CPU measurement (None on CUDA).
    unstable:   a spread (IQR / median) of device or call time above UNSTABLE_REL_IQR;
                unstable_why says which and how much.
    """

    impl: str
    label: str
    backend: str
    op: str
    shape: tuple[int, ...]
    dtype: str
    device: str
    median_us: float
    q1_us: float
    q3_us: float
    reps: int
    bytes: int
    flops: int
    gbps: float
    tflops: float
    intensity: float
    frac_of_copy: float | None = None
    copy_gbps: float | None = None
    ref: str | None = None
    ref_us: float | None = None
    vs_ref: float | None = None
    call_us: float | None = None
    call_q1_us: float | None = None
    call_q3_us: float | None = None
    call_reps: int | None = None
    call_vs_ref: float | None = None
    threads: int | None = None
    unstable: bool = False
    unstable_why: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def iqr_us(self) -> float:
        return self.q3_us - self.q1_us

    @property
    def rel_iqr(self) -> float:
        return self.iqr_us / self.median_us if self.median_us > 0 else math.inf

    @property
    def call_rel_iqr(self) -> float | None:
        if self.call_us is None or self.call_q1_us is None or self.call_q3_us is None:
            return None
        return (self.call_q3_us - self.call_q1_us) / self.call_us if self.call_us > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["shape"] = list(self.shape)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BenchRecord:
        return cls(**{**d, "shape": tuple(d["shape"])})

    def with_reference(self, ref: BenchRecord) -> BenchRecord:
        self.ref, self.ref_us = ref.impl, ref.median_us
        self.vs_ref = ref.median_us / self.median_us
        if ref.call_us and self.call_us:
            self.call_vs_ref = ref.call_us / self.call_us
        return self


def instability(timing: Timing, call: Timing | None, bound: float = UNSTABLE_REL_IQR) -> str:
    """Why a measurement is unstable ("" when both spreads are within `bound`)."""
    why = []
    for name, t in (("device time", timing), ("call time", call)):
        if t is not None and t.rel_iqr > bound:
            why.append(f"{name} IQR {t.rel_iqr:.0%} of the median > {bound:.0%}")
    return "; ".join(why)


def record(
    impl: Implementation,
    shape: tuple[int, ...],
    dtype: str,
    timing: Timing,
    *,
    call: Timing | None = None,
    copy_gbps: float | None = None,
    reference: BenchRecord | None = None,
) -> BenchRecord:
    """A record from a device timing and a call timing. On the CPU, with no `call`, the
    one blocked measurement is both (there is no asynchronous device to separate them)."""
    if call is None and timing.device == "cpu":
        call = timing
    nbytes, nflops = impl.cost(shape, itemsize(dtype))
    t = timing.median_us * 1e-6
    gbps = nbytes / t / 1e9
    why = instability(timing, None if call is timing else call)
    rec = BenchRecord(
        impl=impl.name,
        label=impl.label,
        backend=impl.backend,
        op=impl.op,
        shape=tuple(shape),
        dtype=dtype,
        device=impl.device,
        median_us=timing.median_us,
        q1_us=timing.q1_us,
        q3_us=timing.q3_us,
        reps=timing.n,
        bytes=nbytes,
        flops=nflops,
        gbps=gbps,
        tflops=nflops / t / 1e12,
        intensity=nflops / nbytes if nbytes else 0.0,
        frac_of_copy=gbps / copy_gbps if copy_gbps else None,
        copy_gbps=copy_gbps,
        call_us=None if call is None else call.median_us,
        call_q1_us=None if call is None else call.q1_us,
        call_q3_us=None if call is None else call.q3_us,
        call_reps=None if call is None else call.n,
        threads=timing.threads,
        unstable=bool(why),
        unstable_why=why,
        extra={
            "rel_iqr": timing.rel_iqr,
            "input_sets": timing.n_input_sets,
            "flushed_l2": timing.flushed_l2,
            "calls_per_sample": timing.calls_per_sample,
            **({} if call is None else {"calls_per_call_sample": call.calls_per_sample}),
        },
    )
    if reference is not None:
        rec.with_reference(reference)
    return rec


def input_sets(impl: Implementation, shape: tuple[int, ...], dtype: str, seed: int) -> list[tuple]:
    """The copies of `impl`'s inputs a timing rotates through (`n_input_sets`)."""
    if not impl.accepts(shape, dtype):
        raise ValueError(f"{impl.name} does not accept shape {shape} in {dtype}")
    nbytes, _ = impl.cost(shape, itemsize(dtype))
    sets = n_input_sets(nbytes, l2_bytes()) if impl.device == "cuda" else 1
    return [make_inputs(impl, shape, dtype, seed=seed + k) for k in range(sets)]


def impl_call_time(
    impl: Implementation, arg_sets: Sequence[tuple], time_cap_s: float | None = None
) -> Timing | None:
    """`time_call` of a CUDA implementation, taken after its device time on the same inputs;
    None on the CPU, where the one blocked measurement is both (`record`)."""
    if impl.device != "cuda":
        return None
    return time_call(
        impl.fn, arg_sets, impl.device, **({} if time_cap_s is None else {"time_cap_s": time_cap_s})
    )


def _time_both(
    impl: Implementation, shape: tuple[int, ...], dtype: str, seed: int, call_time: bool, **timing_kw
) -> tuple[Timing, Timing | None]:
    """(device time, call time) on the same inputs; on the CPU one measurement is both."""
    arg_sets = input_sets(impl, shape, dtype, seed)
    if impl.device == "cuda":
        timing_kw.pop("threads", None)  # a CPU setting: the host thread pool does not time kernels
    else:
        timing_kw.setdefault("threads", DEFAULT_CPU_THREADS)
    timing = time_fn(impl.fn, arg_sets, impl.device, **timing_kw)
    call = impl_call_time(impl, arg_sets, timing_kw.get("time_cap_s")) if call_time else None
    return timing, call


def measure(
    impl: Implementation,
    shape: tuple[int, ...],
    dtype: str = "float32",
    *,
    copy_gbps: float | None = None,
    reference: BenchRecord | None = None,
    seed: int = 0,
    call_time: bool = True,
    **timing_kw,
) -> BenchRecord:
    """Time one registered implementation at one shape: the call every benchmark makes.
    Device time and (with `call_time`, the default) call time, on the same inputs."""
    shape = tuple(shape)
    timing, call = _time_both(impl, shape, dtype, seed, call_time, **timing_kw)
    return record(impl, shape, dtype, timing, call=call, copy_gbps=copy_gbps, reference=reference)


# --- pytest-benchmark --------------------------------------------------------------


def into_pytest_benchmark(benchmark, timing: Timing, rec: BenchRecord | None = None) -> None:
    """Store the harness's per-call times (device time on CUDA) as pytest-benchmark's
    rounds, so its table, --benchmark-json, --benchmark-save and --benchmark-compare
    report GPU time rather than host time around a synchronize.

    pytest-benchmark has no public hook for externally timed samples; this uses its
    fixture's `_make_stats`, the same call its own `pedantic` mode makes.
    """
    if getattr(benchmark, "disabled", False):
        return
    benchmark._mode = "labtools.bench"  # the fixture allows one use per test
    stats = benchmark._make_stats(1)
    for us in timing.samples_us:
        stats.update(us * 1e-6)
    benchmark.extra_info.update(
        {
            "timer": f"labtools ({timing.device})",
            "flushed_l2": timing.flushed_l2,
            "calls_per_round": timing.calls_per_sample,  # blocked timing: a round is a block's mean
        }
    )
    if rec is not None:
        benchmark.extra_info.update(
            {
                k: v
                for k, v in rec.to_dict().items()
                if k
                in (
                    "impl",
                    "shape",
                    "dtype",
                    "gbps",
                    "frac_of_copy",
                    "vs_ref",
                    "ref",
                    "call_us",
                    "call_vs_ref",
                    "threads",
                    "unstable",
                    "unstable_why",
                )
            }
        )


def bench(
    benchmark,
    impl: Implementation,
    shape,
    dtype: str = "float32",
    *,
    copy_gbps: float | None = None,
    reference: BenchRecord | None = None,
    seed: int = 0,
    **timing_kw,
) -> BenchRecord:
    """`measure` inside a pytest-benchmark test: the harness times, the fixture records
    the device-time samples as its rounds and call_us (with the rest of the record) in
    extra_info."""
    shape = tuple(shape)
    timing, call = _time_both(impl, shape, dtype, seed, True, **timing_kw)
    rec = record(impl, shape, dtype, timing, call=call, copy_gbps=copy_gbps, reference=reference)
    into_pytest_benchmark(benchmark, timing, rec)
    return rec
