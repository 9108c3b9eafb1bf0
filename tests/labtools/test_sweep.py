"""The shape sweep: what runs, what is skipped or failed and why, ratios, JSON, progress."""

import io
import json

import numpy as np
import pytest
from labtools import accuracy, bench, sweep
from labtools.ceilings import Ceilings
from labtools.ops import softmax_ref, tolerance
from labtools.progress import Progress, clock_str
from labtools.registry import Implementation

SMALL = ((8, 64), (4, 2048))


def _run(**kw):
    cfg = sweep.SweepConfig(
        **{"device": "cpu", "shapes": SMALL, "dtypes": ("float32", "float16"), "time_cap_s": 0.05, **kw}
    )
    ceiling = Ceilings("cpu: test", 10.0, {}, None)
    return sweep.run_sweep(
        cfg,
        ceilings=ceiling,
        environment={"python": "3", "versions": {}, "devices": []},
        command="lab bench softmax (test)",
        progress=sweep.Progress(0, io.StringIO()),
    )


def test_parse_shapes():
    assert sweep.parse_shapes("4096x600, 512X600") == ((4096, 600), (512, 600))
    for bad in ("4096", "4096x", "ax600", "0x600", "4096x600x2"):
        with pytest.raises(ValueError, match="bad shape"):
            sweep.parse_shapes(bad)


def test_default_shapes_are_the_issue_sweep_on_gpu_and_small_on_cpu():
    assert sweep.default_shapes("cuda") == sweep.SWEEP_SHAPES and len(sweep.SWEEP_SHAPES) == 9
    assert (16384, 4096) in sweep.SWEEP_SHAPES and (256, 262144) in sweep.SWEEP_SHAPES
    assert all(m * n <= 2**22 for m, n in sweep.default_shapes("cpu"))
    assert set(sweep.default_shapes("cuda", quick=True)) < set(sweep.SWEEP_SHAPES)


def test_sweep_times_correct_implementations_and_lists_the_rest(fake_registry):
    s = _run()
    timed = {(r.impl, tuple(r.shape), r.dtype) for r in s.records}
    for shape in SMALL:
        for dtype in ("float32", "float16"):
            assert ("fake.ref", shape, dtype) in timed and ("fake.tuned", shape, dtype) in timed
    # supports() rejects long rows; float16 is not offered
    assert ("fake.short_rows", (8, 64), "float32") in timed
    skipped = {(e["impl"], tuple(e["shape"]), e["dtype"]): e["why"] for e in s.skipped}
    assert skipped[("fake.short_rows", (4, 2048), "float32")] == "supports() rejects this shape"
    assert skipped[("fake.short_rows", (8, 64), "float16")] == "float16 not offered"
    # wrong, half-written and crashing implementations are failed, never timed
    failed = {e["impl"]: e["why"] for e in s.failed}
    assert failed["fake.identity"].startswith("wrong result")
    assert "row 7" in failed["fake.tail_bug"] or "row 3" in failed["fake.tail_bug"]  # the last row
    assert failed["fake.crash"].startswith("RuntimeError: launch failed")
    assert not {"fake.identity", "fake.tail_bug", "fake.crash"} & {r.impl for r in s.records}
    # CPU figures are taken with one torch thread (the default), recorded in each record
    assert {r.threads for r in s.records} == {1}
    # only this device's implementations
    assert "fake.gpu_only" not in {r.impl for r in s.records} | set(failed) | {e["impl"] for e in s.skipped}


def test_reference_runs_first_and_sets_vs_ref_and_frac_of_copy(fake_registry):
    s = _run(impls=("tuned",))  # the reference runs even when not asked for
    assert [r.impl for r in s.records[:2]] == ["fake.ref", "fake.tuned"]
    assert {r.impl for r in s.records} == {"fake.ref", "fake.tuned"}
    for ref, other in zip(s.records[::2], s.records[1::2]):
        assert ref.vs_ref == 1.0 and ref.ref == "fake.ref"
        assert other.ref == "fake.ref" and other.vs_ref == pytest.approx(ref.median_us / other.median_us)
        assert other.frac_of_copy == pytest.approx(other.gbps / 10.0)


def test_each_point_times_the_implementations_that_passed_in_turns(fake_registry, monkeypatch):
    """One call of bench.time_in_turns a (shape, dtype), with every implementation that passed its
    check (the reference first) and the configured rounds; a timing's failure is recorded."""
    calls = []
    real = bench.time_in_turns

    def spy(runs, device, rounds, **kw):
        calls.append(([fn for fn, _ in runs], rounds))
        timings = real(runs, device, rounds, **kw)
        return timings[:-1] + [RuntimeError("out of memory")]  # the last one fails while timed

    monkeypatch.setattr(bench, "time_in_turns", spy)
    s = _run(impls=("tuned", "short", "wrong"), rounds=2)
    wrong = fake_registry.get("fake.identity").fn
    assert len(calls) == len(SMALL) * 2 and {rounds for _, rounds in calls} == {2}
    # (8, 64) float32: the reference, tuned and short rows; the wrong one failed its check
    assert len(calls[0][0]) == 3 and wrong not in calls[0][0]
    timed_out = {(e["impl"], tuple(e["shape"]), e["dtype"]) for e in s.failed if "out of memory" in e["why"]}
    assert (("fake.short_rows", (8, 64), "float32")) in timed_out
    assert ("fake.short_rows", (8, 64), "float32") not in {
        (r.impl, tuple(r.shape), r.dtype) for r in s.records
    }
    assert {r.reps for r in s.records if r.impl == "fake.ref"} and all(r.reps >= 2 for r in s.records)


def test_unknown_implementation_is_an_error_naming_what_exists(fake_registry):
    with pytest.raises(ValueError, match="fake.tuned"):
        sweep.select(sweep.SweepConfig(device="cpu", impls=("nope",)))


def test_sweep_json_round_trip(fake_registry, tmp_path):
    s = _run(impls=("F.ref",), dtypes=("float32",))
    path = s.save(tmp_path / "deep" / "sweep.json")
    raw = json.loads(path.read_text())
    assert raw["kind"] == "labtools.sweep" and raw["ceilings"]["copy_gbps"] == 10.0
    assert raw["config"]["shapes"] == [[8, 64], [4, 2048]] and raw["command"] == "lab bench softmax (test)"
    back = sweep.Sweep.load(path)
    assert back.records == s.records and back.skipped == s.skipped and back.ceilings == s.ceilings
    assert back.at((8, 64), "float32")[0].impl == "fake.ref"
    with pytest.raises(ValueError, match="not a labtools sweep"):
        sweep.Sweep.from_dict({"records": []})


def test_format_table_and_summaries(fake_registry):
    s = _run()
    table = sweep.format_table(s)
    assert "vs F.ref" in table and "tuned" in table and "8x64" in table and "1.00x" in table
    headers, rows = sweep.table_rows(s)
    assert headers[4:7] == ("device us", "IQR %", "call us") and headers[9:11] == (
        "vs F.ref",
        "call vs F.ref",
    )
    for r, row in zip(s.records, rows):  # on the CPU the call time is the blocked time itself
        assert row[6] == f"{r.call_us:.1f}" == row[4] and row[10] == f"{r.call_vs_ref:.2f}x"
        assert row[11] == ("unstable" if r.unstable else "")
    assert "call us" in table.splitlines()[0]
    lines = sweep.summarize(s.skipped + s.failed)
    assert any(
        line.startswith("fake.short_rows: supports() rejects this shape -- 4x2048 float32") for line in lines
    )


def test_unstable_records_are_flagged_in_the_table(fake_registry):
    s = _run(impls=("tuned",), dtypes=("float32",))
    noisy = s.records[-1]
    noisy.unstable, noisy.unstable_why = True, "device time IQR 40% of the median > 10%"
    table = sweep.format_table(s)
    flagged = [line for line in table.splitlines() if line.rstrip().endswith("unstable")]
    assert len(flagged) == sum(r.unstable for r in s.records) and noisy.impl in flagged[-1]
    assert "above 10%" in table and "not headlined" in table


def test_check_output_uses_the_dtype_tolerance():
    impl = Implementation(abs, "softmax", "t.check", "numpy", "c", device="cpu")
    x = np.random.default_rng(1).standard_normal((40, 33)).astype(np.float32)
    good = softmax_ref(x).astype(np.float32)
    assert accuracy.check_output(impl, (x,), good, "float32", 4) is None
    off = good.copy()
    off[-2, 5] *= 1 + 100 * tolerance("float32")["rtol"]  # in a row near the end
    assert "row 38, column 5" in accuracy.check_output(impl, (x,), off, "float32", 4)
    off[-2, 5] = good[-2, 5] * (1 + 0.5 * tolerance("float32")["rtol"])  # within tolerance
    assert accuracy.check_output(impl, (x,), off, "float32", 4) is None
    off = good.copy()
    off[4:36] = np.nan  # every middle row unwritten: the random sample between the ends sees it
    assert "wrong result: 132 of" in accuracy.check_output(impl, (x,), off, "float32", 4)  # 4 rows x 33
    assert "shape" in accuracy.check_output(impl, (x,), good[:, :-1], "float32", 4)


def test_check_output_allows_twice_the_references_own_error():
    """The torch op is the contract: an element beyond the dtype's tolerance passes within twice
    the reference's largest error on the same rows (bf16 F.cross_entropy's gradient on a CPU
    falls outside bf16's stated tolerance at rows of 600); the reference itself passes; a wrong
    NaN widens nothing."""
    impl = Implementation(abs, "softmax", "t.check", "numpy", "c", device="cpu")
    x = np.random.default_rng(2).standard_normal((40, 600)).astype(np.float32)
    good = softmax_ref(x)
    ref = good.copy()
    ref[1, 7] += 1e-3  # the reference's own error, well past bf16's tolerance
    err = accuracy.reference_error(impl, (x,), ref, 4)
    assert err == pytest.approx(1e-3)
    assert accuracy.check_output(impl, (x,), ref, "bfloat16", 4, err) is None
    assert "wrong result" in accuracy.check_output(impl, (x,), ref, "bfloat16", 4)  # without it
    ours = good.copy()
    ours[-1, 3] += 1.9e-3
    assert accuracy.check_output(impl, (x,), ours, "bfloat16", 4, err) is None
    ours[-1, 3] += 0.2e-3  # past twice the reference's error
    assert "row 39, column 3" in accuracy.check_output(impl, (x,), ours, "bfloat16", 4, err)
    ref[2, 0] = np.nan
    assert accuracy.reference_error(impl, (x,), ref, 4) == 0.0


def test_make_inputs_gives_backward_a_softmax_output():
    impl = Implementation(abs, "softmax_backward", "t.bwd", "numpy", "b", device="cpu")
    y, dy = bench.make_inputs(impl, (6, 50), "float32", seed=3)
    np.testing.assert_allclose(y.sum(-1), 1.0, rtol=1e-5)
    assert (y > 0).all() and dy.std() > 0.5
    torch = pytest.importorskip("torch")
    timpl = Implementation(abs, "softmax_backward", "t.bwd_t", "torch", "b", device="cpu")
    y, dy = bench.make_inputs(timpl, (6, 50), "bfloat16", seed=3)
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y.float().sum(-1), torch.ones(6), rtol=2e-2, atol=0)


class _Tty(io.StringIO):
    def isatty(self):
        return True


class _Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_progress_in_a_log_prints_a_line_every_few_seconds_with_elapsed_and_eta():
    log, clock = io.StringIO(), _Clock()
    p = Progress(10, log, title="softmax on cpu", interval_s=5.0, clock=clock)
    for k in range(10):
        p.step(f"impl{k}")
        clock.t += 2.0  # each step takes 2 s
    p.close()
    lines = log.getvalue().splitlines()
    # steps start at t = 0, 2, 4, ...: a line at 0, then the first step >= 5 s later (6), 12, 18
    assert lines[:4] == [
        "softmax on cpu: [ 1/10] 0:00 elapsed, ETA ? -- impl0",
        "softmax on cpu: [ 4/10] 0:06 elapsed, ETA 0:14 -- impl3",  # 3 done in 6 s, 7 left
        "softmax on cpu: [ 7/10] 0:12 elapsed, ETA 0:08 -- impl6",
        "softmax on cpu: [10/10] 0:18 elapsed, ETA 0:02 -- impl9",
    ]
    assert lines[4:] == ["softmax on cpu: 10 of 10 steps in 0:20"]


def test_progress_bar_on_a_terminal_redraws_one_line():
    tty, clock = _Tty(), _Clock()
    p = Progress(4, tty, width=8, clock=clock, use_rich=False)
    p.step("a")
    clock.t += 3
    p.step("b")
    clock.t += 3
    p.close()
    out = tty.getvalue()
    assert "\r[##......] [2/4] 0:03 elapsed, ETA 0:09 -- b" in out  # 1 step done in 3 s, 3 left
    assert out.count("\n") == 1 and out.endswith("\n") and "2 of 4 steps in 0:06" in out


def test_progress_plain_mode_and_clock_format():
    tty, clock = _Tty(), _Clock()
    with Progress(2, tty, title="lab run", interval_s=0.0, clock=clock, plain=True) as p:
        p.step("checks")
        clock.t += 3725
        p.step("sweep")
    assert tty.getvalue().splitlines() == [
        "lab run: [1/2] 0:00 elapsed, ETA ? -- checks",
        "lab run: [2/2] 1:02:05 elapsed, ETA 1:02:05 -- sweep",
        "lab run: 2 of 2 steps in 1:02:05",
    ]
    assert clock_str(None) == "?" and clock_str(59.6) == "1:00"


def test_progress_with_rich_on_a_terminal():
    pytest.importorskip("rich")
    tty = _Tty()
    with Progress(3, tty, title="softmax on cuda") as p:
        assert p._rich is not None
        for k in range(3):
            p.step(f"impl{k}")
    assert "3/3" in tty.getvalue()


@pytest.mark.gpu
def test_cuda_sweep_of_the_torch_references():
    from labtools import ceilings

    ceiling = ceilings.measure("cuda", matmul=False)
    assert 500 < ceiling.copy_gbps < 10_000
    cfg = sweep.SweepConfig(device="cuda", shapes=((256, 600), (64, 8192)), time_cap_s=0.3)
    s = sweep.run_sweep(cfg, ceilings=ceiling, progress=sweep.Progress(0, io.StringIO()))
    assert s.failed == []
    timed = {(r.impl, tuple(r.shape), r.dtype) for r in s.records}
    for shape in cfg.shapes:
        for dtype in cfg.dtypes:
            assert ("torch.softmax.cuda", shape, dtype) in timed
            assert ("torch.compile.softmax.cuda", shape, dtype) in timed
    for r in s.records:
        assert r.extra["flushed_l2"] and 0 < r.frac_of_copy < 1.5 and r.vs_ref > 0
