"""Device time on CUDA: events around each launch, L2 flushed before it, the GPU kept busy
while the host issues the call (see the package doc)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from labtools.bench.timing import DEFAULT_FLUSH_BYTES, Timing, settled


class CudaClock:
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
    clock = CudaClock(flush_bytes)
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
        if settled(samples, min_reps, rel_iqr_target) or time.perf_counter() > t_end:
            break
    return Timing(tuple(samples), "cuda", flushed_l2=bool(flush_bytes), n_input_sets=len(arg_sets))
