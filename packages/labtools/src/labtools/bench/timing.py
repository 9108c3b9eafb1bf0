"""What a timing is (`Timing`), when repeating may stop (`settled`), and how several
timings of one function combine (`merged`). Every timer in this package returns a Timing."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

DEFAULT_FLUSH_BYTES = 256 * 1024**2  # > 4x the L2 of any current GPU (H100: 50 MB)
UNSTABLE_REL_IQR = 0.10  # IQR / median above this: the figure is marked unstable, never headlined
WARM_TOLERANCE = 0.10  # warm-up ends when two blocks in a row agree within this (relative)
# torch's intra-op threads while `measure` times a CPU implementation. One thread: on a
# machine whose cores are shared (CI, a laptop running other work) an OpenMP region waits
# at its barrier for a descheduled sibling thread and one call can take 100x longer; a
# single thread gives the same figure wherever the point appears. Recorded in each record.
DEFAULT_CPU_THREADS = 1


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


def settled(samples: Sequence[float], min_reps: int, rel_iqr_target: float) -> bool:
    if len(samples) < min_reps:
        return False
    q1, med, q3 = np.percentile(samples, [25, 50, 75])
    return med > 0 and (q3 - q1) / med <= rel_iqr_target


def merged(timings: Sequence[Timing]) -> Timing:
    """One Timing from several timings of the same function: all their samples."""
    return replace(
        timings[0],
        samples_us=tuple(v for t in timings for v in t.samples_us),
        warmup_blocks=sum(t.warmup_blocks for t in timings),
    )
