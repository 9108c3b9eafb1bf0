"""The one timing harness. Every number kernel-lab prints comes from `measure` or `bench`.

On CUDA each timed launch is bracketed by device events on the current stream, after a
write of a buffer larger than L2 (so the launch starts with a cold cache, as it would
inside a model that touched other tensors in between) and with its inputs rotated
among several copies when one copy would fit in L2. Before each start event the GPU is
also kept busy (a spin kernel) for twice the host time one call takes to issue, so that
the timed span holds the kernels and not a GPU waiting on Python: these are device
times. (Host overhead is real, but it is another number; a Triton launch through its
autotuner issues in ~100 us, far longer than a 10 us kernel.) Timing repeats in batches until the
interquartile range is within `rel_iqr_target` of the median or a time cap is hit, and
reports the median. On the CPU the same loop runs with `time.perf_counter`.

Events come from torch when it is importable (it is wherever a kernel here runs) and
from CuPy otherwise.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from labtools.ops import softmax_ref
from labtools.registry import Implementation

DEFAULT_FLUSH_BYTES = 256 * 1024**2  # > 4x the L2 of any current GPU (H100: 50 MB)


# --- statistics --------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """Per-call times of one function, in microseconds."""

    samples_us: tuple[float, ...]
    device: str
    flushed_l2: bool = False
    n_input_sets: int = 1

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
) -> Timing:
    """Time `fn(*args)` on the current CUDA stream, cycling through `arg_sets`."""
    clock = _CudaClock(flush_bytes)
    for i in range(max(warmup, len(arg_sets))):  # compile, autotune, load modules, page in
        fn(*arg_sets[i % len(arg_sets)])
    clock.synchronize()
    issue_s = []  # host time to issue one call, GPU idle: its upper bound
    for i in range(3):
        t0 = time.perf_counter()
        fn(*arg_sets[i % len(arg_sets)])
        issue_s.append(time.perf_counter() - t0)
        clock.synchronize()
    lead = lead_cycles(issue_s, clock.cycles_per_us())
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


def time_cpu(
    fn: Callable,
    arg_sets: Sequence[tuple],
    *,
    warmup: int = 2,
    min_reps: int = 10,
    max_reps: int = 1000,
    time_cap_s: float = 2.0,
    rel_iqr_target: float = 0.05,
) -> Timing:
    """Time `fn(*args)` on the host with `perf_counter`, same stopping rule as CUDA."""
    for i in range(warmup):
        fn(*arg_sets[i % len(arg_sets)])
    samples: list[float] = []
    t_end = time.perf_counter() + time_cap_s
    i = 0
    while len(samples) < max_reps:
        args = arg_sets[i % len(arg_sets)]
        t0 = time.perf_counter()
        fn(*args)
        samples.append(1e6 * (time.perf_counter() - t0))
        i += 1
        if _settled(samples, min_reps, rel_iqr_target) or time.perf_counter() > t_end:
            break
    return Timing(tuple(samples), "cpu", n_input_sets=len(arg_sets))


def time_fn(fn: Callable, arg_sets: Sequence[tuple], device: str, **kw) -> Timing:
    return (time_cuda if device == "cuda" else time_cpu)(fn, arg_sets, **kw)


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

    gbps:       compulsory bytes (op's model) / median time.
    frac_of_copy: gbps / the copy ceiling measured in the same run (None if not given).
    vs_ref:     reference median / this median: 1.0 is as fast as the reference, 2.0
                twice as fast (None if no reference was timed).
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
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def iqr_us(self) -> float:
        return self.q3_us - self.q1_us

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
        return self


def record(
    impl: Implementation,
    shape: tuple[int, ...],
    dtype: str,
    timing: Timing,
    *,
    copy_gbps: float | None = None,
    reference: BenchRecord | None = None,
) -> BenchRecord:
    nbytes, nflops = impl.cost(shape, itemsize(dtype))
    t = timing.median_us * 1e-6
    gbps = nbytes / t / 1e9
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
        extra={"rel_iqr": timing.rel_iqr, "input_sets": timing.n_input_sets, "flushed_l2": timing.flushed_l2},
    )
    if reference is not None:
        rec.with_reference(reference)
    return rec


def _time_impl(impl: Implementation, shape: tuple[int, ...], dtype: str, seed: int, **timing_kw) -> Timing:
    if not impl.accepts(shape, dtype):
        raise ValueError(f"{impl.name} does not accept shape {shape} in {dtype}")
    nbytes, _ = impl.cost(shape, itemsize(dtype))
    sets = n_input_sets(nbytes, l2_bytes()) if impl.device == "cuda" else 1
    arg_sets = [make_inputs(impl, shape, dtype, seed=seed + k) for k in range(sets)]
    return time_fn(impl.fn, arg_sets, impl.device, **timing_kw)


def measure(
    impl: Implementation,
    shape: tuple[int, ...],
    dtype: str = "float32",
    *,
    copy_gbps: float | None = None,
    reference: BenchRecord | None = None,
    seed: int = 0,
    **timing_kw,
) -> BenchRecord:
    """Time one registered implementation at one shape: the call every benchmark makes."""
    shape = tuple(shape)
    timing = _time_impl(impl, shape, dtype, seed, **timing_kw)
    return record(impl, shape, dtype, timing, copy_gbps=copy_gbps, reference=reference)


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
    benchmark.extra_info.update({"timer": f"labtools ({timing.device})", "flushed_l2": timing.flushed_l2})
    if rec is not None:
        benchmark.extra_info.update(
            {
                k: v
                for k, v in rec.to_dict().items()
                if k in ("impl", "shape", "dtype", "gbps", "frac_of_copy", "vs_ref", "ref")
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
    """`measure` inside a pytest-benchmark test: the harness times, the fixture records."""
    shape = tuple(shape)
    timing = _time_impl(impl, shape, dtype, seed, **timing_kw)
    rec = record(impl, shape, dtype, timing, copy_gbps=copy_gbps, reference=reference)
    into_pytest_benchmark(benchmark, timing, rec)
    return rec
