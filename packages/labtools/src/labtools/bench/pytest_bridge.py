"""pytest-benchmark on the harness's times: a benchmark test calls `bench(benchmark, ...)`
and pytest-benchmark's table, --benchmark-json and --benchmark-compare report device time."""

from __future__ import annotations

from labtools.bench.records import BenchRecord, record, time_both
from labtools.bench.timing import Timing
from labtools.registry import Implementation


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
                    "picks",
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
    timing, call = time_both(impl, shape, dtype, seed, True, **timing_kw)
    rec = record(impl, shape, dtype, timing, call=call, copy_gbps=copy_gbps, reference=reference)
    into_pytest_benchmark(benchmark, timing, rec)
    return rec
