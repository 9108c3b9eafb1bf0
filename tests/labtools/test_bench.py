"""The timing harness: statistics, stopping rule, records, pytest-benchmark storage, device time on
CUDA (call time and turns: test_bench_calls.py)."""

import numpy as np
import pytest
from labtools import bench
from labtools.registry import Implementation


def test_timing_statistics_on_synthetic_samples():
    t = bench.Timing(tuple(float(v) for v in range(1, 101)), "cpu")
    assert t.n == 100
    assert t.median_us == pytest.approx(50.5)
    assert t.q1_us == pytest.approx(25.75) and t.q3_us == pytest.approx(75.25)
    assert t.iqr_us == pytest.approx(49.5)
    assert t.rel_iqr == pytest.approx(49.5 / 50.5)
    assert t.min_us == 1.0


def test_settled_needs_enough_samples_and_a_tight_spread():
    tight = [100.0, 100.5, 99.5, 100.2] * 5
    assert bench.settled(tight, min_reps=10, rel_iqr_target=0.02)
    assert not bench.settled(tight[:5], min_reps=10, rel_iqr_target=0.02)
    assert not bench.settled([1.0, 2.0, 3.0, 4.0] * 5, min_reps=10, rel_iqr_target=0.02)


def test_time_cpu_measures_and_stops():
    x = np.random.default_rng(0).standard_normal((256, 256))
    t = bench.time_cpu(lambda a: a @ a, [(x,)], min_reps=5, max_reps=40, time_cap_s=1.0)
    assert 5 <= t.n <= 40 and t.device == "cpu"
    assert all(s > 0 for s in t.samples_us)


def test_n_input_sets_covers_twice_the_l2():
    assert bench.n_input_sets(10 * 2**20, 50 * 2**20) == 10
    assert bench.n_input_sets(1 * 2**20, 50 * 2**20) == 16  # capped
    assert bench.n_input_sets(2**30, 50 * 2**20) == 1
    assert bench.n_input_sets(2**20, 0) == 1  # CPU: no L2 model, no rotation


def test_record_derives_bandwidth_and_ratios():
    impl = Implementation(lambda x: x, "softmax", "t.x", "numpy", "x", device="cpu")
    slow = bench.record(impl, (1000, 1000), "float32", bench.Timing((100.0,) * 3, "cpu"), copy_gbps=200.0)
    assert slow.bytes == 8_000_000 and slow.flops == 5_000_000
    assert slow.gbps == pytest.approx(80.0)  # 8 MB in 100 us
    assert slow.frac_of_copy == pytest.approx(0.4)
    assert slow.tflops == pytest.approx(0.05)
    fast = bench.record(impl, (1000, 1000), "float32", bench.Timing((50.0,) * 3, "cpu"), reference=slow)
    assert fast.vs_ref == pytest.approx(2.0) and fast.ref == "t.x"
    assert fast.to_dict()["shape"] == [1000, 1000]


def test_records_carry_the_picks_their_launches_used():
    """A record of an implementation that keeps picks says, for its row length and dtype, the card
    and the source (committed / rule / tuned / given ...); one of another row length none; an
    implementation without picks no picks at all. Through to_dict and back."""
    used = [
        {"key": {"N": 600, "dtype": "bfloat16"}, "config": {"source": "committed", "card": "NVIDIA H200"}},
        {
            "key": {"N": 1024, "dtype": "torch.float32", "rows_per_sm": 64},
            "config": {"BLOCK": 1024, "source": "rule"},
        },
    ]
    picky = Implementation(
        lambda x: x, "softmax", "t.picky", "numpy", "p", device="cpu", meta={"autotune_picks": lambda: used}
    )
    timing = bench.Timing((10.0,) * 3, "cpu")
    rec = bench.record(picky, (65536, 600), "bfloat16", timing)
    assert rec.picks == {"card": "NVIDIA H200", "source": "committed"}
    assert bench.record(picky, (8, 1024), "float32", timing).picks == {"card": None, "source": "rule"}
    assert bench.record(picky, (8, 600), "float32", timing).picks == {"card": None, "source": None}
    assert bench.BenchRecord.from_dict(rec.to_dict()).picks == rec.picks
    plain = Implementation(lambda x: x, "softmax", "t.plain", "numpy", "x", device="cpu")
    assert bench.record(plain, (8, 600), "float32", timing).picks is None

    def broken():
        raise RuntimeError("no picks today")

    broken_impl = Implementation(
        lambda x: x, "softmax", "t.b", "numpy", "b", device="cpu", meta={"autotune_picks": broken}
    )
    assert "no picks today" in bench.record(broken_impl, (8, 600), "float32", timing).picks["why"]


def test_measure_times_a_registered_cpu_implementation():
    impl = Implementation(
        lambda x: np.exp(x), "softmax", "t.exp", "numpy", "exp", device="cpu", dtypes=("float32",)
    )
    rec = bench.measure(impl, (64, 128), "float32", min_reps=5, time_cap_s=0.5)
    assert rec.median_us > 0 and rec.reps >= 5 and rec.gbps > 0
    with pytest.raises(ValueError, match="does not accept"):
        bench.measure(impl, (64, 128), "bfloat16")


class _FakeStats:
    def __init__(self):
        self.values = []

    def update(self, v):
        self.values.append(v)


class _FakeFixture:
    disabled = False

    def __init__(self):
        self.extra_info = {}
        self.made = []

    def _make_stats(self, iterations):
        s = _FakeStats()
        self.made.append((iterations, s))
        return s


def test_into_pytest_benchmark_stores_harness_samples_in_seconds():
    fx = _FakeFixture()
    impl = Implementation(lambda x: x, "softmax", "t.x", "numpy", "x", device="cuda")
    timing = bench.Timing((10.0, 20.0), "cuda", flushed_l2=True)
    rec = bench.record(impl, (8, 8), "float32", timing, call=bench.Timing((40.0, 40.0), "cuda-call"))
    bench.into_pytest_benchmark(fx, timing, rec)
    ((iterations, stats),) = fx.made
    assert iterations == 1 and stats.values == [pytest.approx(1e-5), pytest.approx(2e-5)]
    assert fx.extra_info["timer"] == "labtools (cuda)" and fx.extra_info["flushed_l2"] is True
    assert fx.extra_info["call_us"] == 40.0 and fx.extra_info["unstable"] is True  # 10 vs 20 us
    assert fx.extra_info["calls_per_round"] == 1


def test_lead_cycles_cover_twice_the_slowest_issue():
    assert bench.lead_cycles([50e-6, 120e-6, 80e-6], cycles_per_us=1980.0) == int(2 * 120 * 1980.0)
    assert bench.lead_cycles([], 1980.0) == 0
    assert bench.lead_cycles([1e-4], 0.0) == 0  # no spin kernel (CuPy clock): no lead


def test_functions_timed_in_turns_on_cuda_all_wait_as_long_as_the_slowest_to_issue(monkeypatch):
    """The spin before each timed launch moves a launch of a few microseconds, so in turns
    every function gets the same one, twice the slowest host issue of them all; one that fails
    to warm up is recorded, not timed."""
    import time

    class NoGpuClock:
        def __init__(self, flush_bytes):
            pass

        def synchronize(self):
            pass

    leads = []

    def fake_time_fn(fn, arg_sets, device, time_cap_s, **kw):
        leads.append(kw["lead_s"])
        return bench.Timing((1.0,), device)

    def issuing_in(seconds):
        def fn():
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < seconds:
                pass

        return fn

    def broken():
        raise RuntimeError("no kernel")

    monkeypatch.setattr(bench.turns, "CudaClock", NoGpuClock)
    monkeypatch.setattr(bench.turns, "time_fn", fake_time_fn)
    runs = [(issuing_in(1e-4), [()]), (broken, [()]), (issuing_in(2e-3), [()])]
    fast, failed, slow = bench.time_in_turns(runs, "cuda", 2)
    assert isinstance(failed, RuntimeError) and fast.n == slow.n == 2
    assert len(leads) == 4 and len(set(leads)) == 1 and 4e-3 <= leads[0] < 0.1


@pytest.mark.gpu
def test_time_cuda_reports_device_time_not_host_issue_time():
    """A call that spends 300 us on the host before a tiny kernel must time as the kernel."""
    import time

    import torch

    x = torch.randn(4096, device="cuda")

    def slow_to_issue(t):
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 300e-6:
            pass
        return t.add_(1.0)

    t = bench.time_cuda(slow_to_issue, [(x,)], min_reps=10, time_cap_s=1.0)
    assert t.median_us < 100, t.median_us
    call = bench.time_call(slow_to_issue, [(x,)], "cuda", time_cap_s=0.5)
    assert call.median_us > 300, call.median_us  # call time holds the host's 300 us
