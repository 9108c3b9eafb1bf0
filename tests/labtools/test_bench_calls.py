"""The timing harness's call time: blocked timing (wall per call, calls back to back; every CPU
figure), the records that carry it beside device time, and functions timed in turns."""

import math

import pytest
from labtools import bench
from labtools.registry import Implementation


class _FakeClock:
    """A clock that only moves when the timed function says it spent time."""

    def __init__(self):
        self.t = 0.0
        self.calls = 0
        self.syncs = []  # number of calls made when each synchronize happened

    def __call__(self):
        return self.t

    def fn(self, cost_s):
        def call():
            self.calls += 1
            self.t += cost_s(self.calls)

        return call

    def sync(self):
        self.syncs.append(self.calls)


def test_time_blocks_sizes_blocks_and_reports_wall_per_call():
    clock = _FakeClock()
    t = bench.time_blocks(
        clock.fn(lambda k: 20e-6), [()], min_block_s=0.01, min_reps=5, time_cap_s=1.0, clock=clock
    )
    assert t.calls_per_sample == 512  # 1, 2, 4, ... until a block takes >= 10 ms (512 x 20 us)
    assert t.n >= 5 and t.median_us == pytest.approx(20.0) and t.rel_iqr == pytest.approx(0.0, abs=1e-9)


def test_time_blocks_warms_up_until_two_blocks_agree():
    clock = _FakeClock()
    # calls start 5x slower and speed up over the first thousands (caches, a JIT, clocks):
    # warm-up goes on while successive blocks still differ by more than WARM_TOLERANCE
    t = bench.time_blocks(
        clock.fn(lambda k: 20e-6 * (1 + 4 * math.exp(-k / 800))),
        [()],
        min_block_s=0.01,
        min_reps=5,
        time_cap_s=100.0,
        clock=clock,
    )
    assert t.warmup_blocks >= 2
    assert t.median_us == pytest.approx(20.0, rel=0.05)


def test_time_blocks_synchronizes_only_at_block_ends():
    clock = _FakeClock()
    t = bench.time_blocks(
        clock.fn(lambda k: 1e-3),
        [()],
        device="cuda-call",
        synchronize=clock.sync,
        calls_per_block=4,
        min_reps=3,
        max_reps=3,
        clock=clock,
    )
    assert t.calls_per_sample == 4 and t.n == 3 and t.median_us == pytest.approx(1000.0)
    # two synchronizes per block (before and after), every one at a multiple of 4 calls
    assert len(clock.syncs) % 2 == 0 and all(n % 4 == 0 for n in clock.syncs)
    assert t.threads is None  # a CUDA call time records no CPU thread count


def test_time_blocks_with_warmup_zero_times_the_first_call():
    clock = _FakeClock()
    t = bench.time_blocks(
        clock.fn(lambda k: 0.5 if k == 1 else 1e-3), [()], warmup=0, min_reps=1, max_reps=1, clock=clock
    )
    assert t.samples_us == (pytest.approx(0.5e6),) and clock.calls == 1


def test_time_cpu_fixes_and_records_the_thread_count():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    seen = []
    t = bench.time_cpu(lambda: seen.append(torch.get_num_threads()), [()], threads=1, time_cap_s=0.05)
    assert set(seen) == {1} and t.threads == 1
    assert torch.get_num_threads() == before  # restored


def test_unstable_figures_are_marked_with_the_reason():
    impl = Implementation(lambda x: x, "softmax", "t.x", "numpy", "x", device="cpu")
    steady = bench.Timing((100.0, 101.0, 99.0, 100.0), "cpu")
    noisy = bench.Timing((50.0, 100.0, 200.0, 400.0), "cpu")
    assert not bench.record(impl, (8, 8), "float32", steady).unstable
    rec = bench.record(impl, (8, 8), "float32", noisy)
    assert rec.unstable and "device time IQR" in rec.unstable_why and "> 10%" in rec.unstable_why
    cuda_steady = bench.Timing((10.0, 10.1, 9.9), "cuda")
    rec = bench.record(impl, (8, 8), "float32", cuda_steady, call=noisy)
    assert rec.unstable and rec.unstable_why.startswith("call time IQR")


def test_cpu_record_is_its_own_call_time_and_ratios_cover_both():
    impl = Implementation(lambda x: x, "softmax", "t.x", "numpy", "x", device="cpu")
    ref = bench.record(impl, (8, 8), "float32", bench.Timing((100.0,) * 3, "cpu", threads=2))
    assert ref.call_us == ref.median_us == 100.0 and ref.threads == 2
    gpu = bench.record(
        impl,
        (8, 8),
        "float32",
        bench.Timing((10.0,) * 3, "cuda"),
        call=bench.Timing((25.0,) * 3, "cuda-call"),
    )
    assert gpu.median_us == 10.0 and gpu.call_us == 25.0 and gpu.threads is None
    gpu.with_reference(ref)
    assert gpu.vs_ref == pytest.approx(10.0) and gpu.call_vs_ref == pytest.approx(4.0)
    back = bench.BenchRecord.from_dict(gpu.to_dict())
    assert back == gpu and back.call_rel_iqr == 0.0


def test_measure_on_cuda_times_device_and_call_time_on_the_same_inputs(monkeypatch):
    impl = Implementation(abs, "softmax", "t.gpu", "torch", "g", device="cuda", dtypes=("float32",))
    arg_sets = [("x0",), ("x1",)]
    seen = {}
    monkeypatch.setattr(bench.records, "input_sets", lambda *a: arg_sets)

    def fake_time_fn(fn, sets, device, **kw):
        seen["device"] = (sets, device)
        return bench.Timing((10.0, 10.0, 10.0), "cuda", flushed_l2=True, n_input_sets=2)

    def fake_time_call(fn, sets, device, **kw):
        seen["call"] = (sets, device, kw)
        return bench.Timing((30.0, 31.0, 29.0), "cuda-call", calls_per_sample=500)

    monkeypatch.setattr(bench.records, "time_fn", fake_time_fn)
    monkeypatch.setattr(bench.records, "time_call", fake_time_call)
    rec = bench.measure(impl, (4, 8), "float32", time_cap_s=0.5)
    assert seen["device"] == (arg_sets, "cuda") and seen["call"][:2] == (arg_sets, "cuda")
    assert seen["call"][2] == {"time_cap_s": 0.5}
    assert rec.median_us == 10.0 and rec.call_us == 30.0 and rec.extra["calls_per_call_sample"] == 500
    seen.clear()
    rec = bench.measure(impl, (4, 8), "float32", call_time=False)
    assert "call" not in seen and rec.call_us is None


def test_calls_taking_turns_alternate_the_order_and_pair_rounds():
    """Each round times every function over `calls` calls, in reverse order every other
    round, synchronized around each loop; the paired ratio is the median of the ratios
    within rounds, not the ratio of the medians."""
    now = [0.0]
    loops: list[str] = []  # which function each timed loop ran, in order
    cost = {"a": 3.0, "b": 1.0}  # seconds a call, scaled by the host's drift below
    drift = [1.0, 1.0, 4.0, 4.0, 2.0, 2.0]  # per timed loop: slow rounds hit both alike
    syncs = [0]

    def make(name):
        def fn():
            if syncs[0] == 0:
                return  # warm-up: no clock
            if not loops or loops[-1][1] != syncs[0]:
                loops.append((name, syncs[0]))
            now[0] += cost[name] * drift[len(loops) - 1]

        return fn

    def synchronize():
        syncs[0] += 1

    times = bench.time_calls_taking_turns(
        {"a": make("a"), "b": make("b")}, calls=4, rounds=3, synchronize=synchronize, clock=lambda: now[0]
    )
    assert [name for name, _ in loops] == ["a", "b", "b", "a", "a", "b"]
    assert times["a"] == [3e6, 12e6, 6e6] and times["b"] == [1e6, 4e6, 2e6]
    assert bench.paired_ratio(times, "a", "b") == 3.0
    assert bench.paired_ratio({"a": [1.0, 4.0, 9.0], "b": [1.0, 1.0, 1.0]}, "a", "b") == 4.0


def test_device_times_taken_in_turns_alternate_the_order_and_keep_every_round(monkeypatch):
    """Each round times every function for its share of the time cap, the order reversed every
    other round; a function's Timing holds all its rounds' samples; one that raises is returned
    as its exception and not timed again, while the others go on."""
    timed: list[tuple[str, float]] = []

    def fake_time_fn(fn, arg_sets, device, time_cap_s, **kw):
        name = fn()
        timed.append((name, time_cap_s))
        return bench.Timing((float(len(timed)), float(len(timed))), device, warmup_blocks=1)

    def make(name):
        return lambda: name

    monkeypatch.setattr(bench.turns, "time_fn", fake_time_fn)
    a, b, c = bench.time_in_turns(
        [(make("a"), [()]), (make("b"), [()]), (make("c"), [()])], "cpu", 3, time_cap_s=0.6
    )
    assert [name for name, _ in timed] == ["a", "b", "c", "c", "b", "a", "a", "b", "c"]
    assert all(cap == pytest.approx(0.2) for _, cap in timed)
    assert a.samples_us == (1.0, 1.0, 6.0, 6.0, 7.0, 7.0) and a.warmup_blocks == 3 and a.n == 6

    timed.clear()

    def broken_second_round(state={"calls": 0}):  # noqa: B006 - a counter kept across calls
        state["calls"] += 1
        if state["calls"] == 2:
            raise RuntimeError("launch failed")
        return "x"

    monkeypatch.setattr(bench.turns, "time_fn", lambda fn, *a, **k: (fn(), bench.Timing((1.0,), "cpu"))[1])
    x, y = bench.time_in_turns([(broken_second_round, [()]), (make("y"), [()])], "cpu", 3)
    assert isinstance(x, RuntimeError) and y.n == 3
    with pytest.raises(ValueError, match="rounds must be >= 1"):
        bench.time_in_turns([(make("a"), [()])], "cpu", 0)
