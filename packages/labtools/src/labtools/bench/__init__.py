"""The one timing harness. Every number kernel-lab prints comes from `measure` or `bench`.

Two times are taken of every implementation at every point, because users feel both:

- **device time** (`median_us`, CUDA): each timed launch is bracketed by device events on
  the current stream, after a write of a buffer larger than L2 (so the launch starts with a
  cold cache, as it would inside a model that touched other tensors in between) and with
  its inputs rotated among several copies when one copy would fit in L2. Before each start
  event the GPU is kept busy (a spin kernel) for twice the host time one call takes to
  issue, so the timed span holds the kernels and not a GPU waiting on Python; functions
  timed in turns all wait as long as the slowest to issue needs (the length of that wait
  moves a launch of a few microseconds, so it must be the same for all of them). Timing
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

Modules: `timing` (the Timing type and the stopping rule every timer shares), `cuda` (device
time), `blocks` (call time and CPU time), `turns` (several functions side by side), `inputs`,
`records` (BenchRecord, `measure`), `pytest_bridge` (`bench` for pytest-benchmark). Everything
public is importable from `labtools.bench`.
"""

from labtools.bench.blocks import fixed_threads, no_sync, time_blocks, time_call, time_cpu, time_fn
from labtools.bench.cuda import CudaClock, host_issue_s, lead_cycles, time_cuda, warm_up
from labtools.bench.inputs import input_sets, itemsize, l2_bytes, make_inputs, n_input_sets
from labtools.bench.pytest_bridge import bench, into_pytest_benchmark
from labtools.bench.records import BenchRecord, impl_call_time, instability, measure, record, time_both
from labtools.bench.timing import (
    DEFAULT_CPU_THREADS,
    DEFAULT_FLUSH_BYTES,
    UNSTABLE_REL_IQR,
    WARM_TOLERANCE,
    Timing,
    merged,
    settled,
)
from labtools.bench.turns import paired_ratio, time_calls_taking_turns, time_in_turns, turn_order

__all__ = [
    "DEFAULT_CPU_THREADS",
    "DEFAULT_FLUSH_BYTES",
    "UNSTABLE_REL_IQR",
    "WARM_TOLERANCE",
    "BenchRecord",
    "CudaClock",
    "Timing",
    "bench",
    "fixed_threads",
    "host_issue_s",
    "impl_call_time",
    "input_sets",
    "instability",
    "into_pytest_benchmark",
    "itemsize",
    "l2_bytes",
    "lead_cycles",
    "make_inputs",
    "measure",
    "merged",
    "n_input_sets",
    "no_sync",
    "paired_ratio",
    "record",
    "settled",
    "time_blocks",
    "time_both",
    "time_call",
    "time_calls_taking_turns",
    "time_cpu",
    "time_cuda",
    "time_fn",
    "time_in_turns",
    "turn_order",
    "warm_up",
]
