"""Blocked timing: wall time per call with calls back to back, synchronized once a block.
It is the call time of a CUDA implementation and every CPU figure (one method for both)."""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence

from labtools.bench.cuda import CudaClock, time_cuda
from labtools.bench.timing import WARM_TOLERANCE, Timing, settled


def no_sync() -> None:
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
    synchronize: Callable[[], None] = no_sync,
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
            if settled(samples, min_reps, rel_iqr_target) or (
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
    clock = CudaClock(flush_bytes=0)
    return time_blocks(fn, arg_sets, device="cuda-call", synchronize=clock.synchronize, **kw)


def time_fn(fn: Callable, arg_sets: Sequence[tuple], device: str, **kw) -> Timing:
    return (time_cuda if device == "cuda" else time_cpu)(fn, arg_sets, **kw)
