"""Eager vs compiled, and compile modes against each other, timed by labtools.bench.

For each mode the function is compiled in a fresh cache (so compile time is a first
compile, as a user meets it), its first call timed once (compile + first run, host
clock), its output checked against eager, then its warm calls timed at the same shapes
by the harness: `time_cpu` on the CPU, `time_cuda` (device events, L2 flushed) on CUDA.
On CUDA the host-side latency of a synchronized call is timed too (`time_cpu` around
call + synchronize): for a model this small the GPU time is not what the user waits for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

from labtools.bench import Timing, time_cpu, time_fn
from labtools.inductor.capture import fresh_cache, leaves, max_abs_diff

MODES = ("default", "max-autotune")


@dataclass
class Stat:
    median_us: float
    q1_us: float
    q3_us: float
    reps: int

    @classmethod
    def of(cls, t: Timing) -> Stat:
        return cls(t.median_us, t.q1_us, t.q3_us, t.n)


@dataclass
class ProfileRecord:
    target: str
    device: str
    shapes: list[list[int]]
    mode: str
    compile_s: float  # first call in a fresh cache: trace, compile, first run
    max_abs_error: float  # against eager
    eager: Stat
    compiled: Stat
    eager_host: Stat | None = None  # CUDA: per synchronized call, host clock
    compiled_host: Stat | None = None

    @property
    def speedup(self) -> float:
        """eager / compiled: above 1, compiled is faster."""
        return self.eager.median_us / self.compiled.median_us

    def to_dict(self) -> dict:
        return {**asdict(self), "speedup": self.speedup}


def _synchronized(fn: Callable) -> Callable:
    def call(*args):
        out = fn(*args)
        torch.cuda.synchronize()
        return out

    return call


def _first_call(compiled: Callable, inputs: tuple, device: str, outputs: list) -> Callable:
    """The call that compiles: keeps a copy of its outputs (CUDA graphs reuse output memory)."""

    def call():
        out = compiled(*inputs)
        if device == "cuda":
            torch.cuda.synchronize()
        outputs.append([t.clone() for t in leaves(out)])

    return call


def profile(
    fn: Callable, *inputs: Any, target: str = "", modes: Sequence[str] = MODES
) -> list[ProfileRecord]:
    """One record per compile mode: compile time, warm eager and compiled times, max error."""
    device = leaves(list(inputs))[0].device.type if leaves(list(inputs)) else "cpu"
    shapes = [list(t.shape) for t in leaves(list(inputs))]
    records = []
    with torch.no_grad():
        eager_out = fn(*inputs)
        eager = time_fn(fn, [inputs], device)
        eager_host = time_cpu(_synchronized(fn), [inputs]) if device == "cuda" else None
        for mode in modes:
            with fresh_cache():
                compiled = torch.compile(fn, mode=mode, dynamic=False)
                first: list = []
                compile_t = time_cpu(
                    _first_call(compiled, inputs, device, first), [()], warmup=0, min_reps=1, max_reps=1
                )
                error = max_abs_diff(first[0], eager_out)
                warm = time_fn(compiled, [inputs], device)
                warm_host = time_cpu(_synchronized(compiled), [inputs]) if device == "cuda" else None
            records.append(
                ProfileRecord(
                    target,
                    device,
                    shapes,
                    mode,
                    compile_t.samples_us[0] * 1e-6,
                    error,
                    Stat.of(eager),
                    Stat.of(warm),
                    Stat.of(eager_host) if eager_host else None,
                    Stat.of(warm_host) if warm_host else None,
                )
            )
    return records
