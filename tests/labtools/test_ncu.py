"""Nsight Compute CSV parsing, verdicts and command lines (no ncu needed).

data/ncu_sample.csv is hand-made in the `ncu --csv --page details` long format (with a
preamble, rule rows, mixed units, thousands separators, a templated kernel name full of
commas); the exact-value tests below are about it. Captures from a real GPU go next to
it as data/ncu_<gpu>.csv (`lab ncu --impl ... --out DIR` writes DIR/ncu_details.csv):
every data/ncu_*.csv must parse into sane numbers and a verdict."""

import csv
import io
import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from labtools import ncu
from labtools.cli import main

SAMPLE = Path(__file__).parent / "data" / "ncu_sample.csv"


@pytest.fixture(scope="module")
def kernels():
    return {k.name.split("(")[0].split("<")[0]: k for k in ncu.parse_csv(SAMPLE.read_text())}


@pytest.mark.parametrize("capture", sorted(SAMPLE.parent.glob("ncu_*.csv")), ids=lambda p: p.name)
def test_every_capture_parses_into_sane_numbers(capture):
    kernels = ncu.parse_csv(capture.read_text())
    assert kernels and len({k.id for k in kernels}) == len(kernels)
    for k in kernels:
        assert k.name and k.duration_us > 0 and k.registers_per_thread > 0
        assert 0 <= k.dram_pct <= 100 and 0 <= k.sm_pct <= 100 and 0 <= k.achieved_occupancy_pct <= 100
        assert all(v >= 0 for _, v in k.stalls)
        assert not k.verdict().startswith("no verdict")


def test_number_reads_ncu_values():
    assert ncu.number("1,234.56") == 1234.56
    assert ncu.number("2,160,480") == 2160480
    assert ncu.number(' "12.5" ') == 12.5
    assert ncu.number("1.5e+03") == 1500.0
    assert ncu.number("-3") == -3.0
    for missing in ("n/a", "N/A", "", None, "12,34"):
        assert ncu.number(missing) is None


def test_sample_parses_into_one_profile_per_launch(kernels):
    assert list(kernels) == [
        "softmax_naive",
        "softmax_fused_kernel",
        "void at::native::",
        "triton_softmax_kernel",
    ]
    aten = kernels["void at::native::"]
    assert aten.name.endswith("SoftMaxForwardEpilogue>(float *, const float *, int)")
    assert aten.info["Grid Size"] == "(16384, 1, 1)" and aten.info["CC"] == "9.0"
    assert all(m.name for k in kernels.values() for m in k.metrics)  # rule-only rows are dropped


def test_units_are_normalized(kernels):
    assert kernels["softmax_naive"].duration_us == pytest.approx(1234.56)  # usecond with a separator
    assert kernels["softmax_fused_kernel"].duration_us == pytest.approx(241.18)
    assert kernels["void at::native::"].duration_us == pytest.approx(1020.0)  # msecond
    assert kernels["triton_softmax_kernel"].duration_us == pytest.approx(8.8505)  # nsecond
    assert kernels["softmax_fused_kernel"].dram_gbps == pytest.approx(2710.0)  # Tbyte/second
    assert kernels["triton_softmax_kernel"].dram_gbps == pytest.approx(1790.3)  # Gbyte/second
    assert kernels["softmax_naive"].dram_gbps is None  # SpeedOfLight's "Memory Throughput" is a %, not a rate


def test_per_kernel_numbers(kernels):
    naive, fused = kernels["softmax_naive"], kernels["softmax_fused_kernel"]
    assert (naive.dram_pct, naive.sm_pct, naive.achieved_occupancy_pct, naive.registers_per_thread) == (
        12.31,
        8.52,
        11.93,
        18,
    )
    assert (fused.dram_pct, fused.sm_pct, fused.achieved_occupancy_pct, fused.registers_per_thread) == (
        91.24,
        35.40,
        87.30,
        32,
    )
    assert naive.stalls[:3] == [("long_scoreboard", 25.10), ("wait", 2.31), ("math_pipe_throttle", 0.12)]
    assert "tex_throttle" not in dict(naive.stalls)  # n/a
    assert kernels["triton_softmax_kernel"].stalls == []


def test_verdicts(kernels):
    assert kernels["softmax_fused_kernel"].verdict().startswith("memory-bound (DRAM 91% / SM 35%")
    assert "top stall: long_scoreboard" in kernels["softmax_fused_kernel"].verdict()
    assert kernels["softmax_naive"].verdict().startswith("latency-bound")
    assert "occupancy 12%" in kernels["softmax_naive"].verdict()
    assert kernels["void at::native::"].verdict().startswith("compute-bound")
    assert kernels["triton_softmax_kernel"].verdict().startswith("under-utilized")
    empty = ncu.KernelProfile("9", "k")
    assert empty.verdict().startswith("no verdict") and empty.duration_us is None


def test_other_column_layouts_parse():
    # an older layout ("Kernel Time", no launch columns), columns in another order, an unknown extra column
    text = (
        '"Metric Value","Metric Unit","Metric Name","Section Name","ID","Kernel Name","Kernel Time","Extra"\n'
        '"88.1","%","DRAM Throughput","GPU Speed Of Light Throughput","3","k1","01/01/2026","x"\n'
        '"12.0","%","Compute (SM) Throughput","GPU Speed Of Light Throughput","3","k1","01/01/2026","x"\n'
        '"3.5","msecond","gpu__time_duration.sum","Command line profiler metrics","3","k1","01/01/2026","x"\n'
    )
    (k,) = ncu.parse_csv(text)
    assert k.id == "3" and k.name == "k1" and k.info == {}
    assert k.dram_pct == 88.1 and k.duration_us == pytest.approx(3500.0)
    assert k.verdict().startswith("memory-bound")


def test_no_data_is_missing_not_an_error():
    """ncu 2025 writes "no data" for a metric of a section it could not collect (the memory
    workload analysis' spilling overhead of a kernel that spills nothing)."""
    text = (
        '"ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"\n'
        '"1","k","GPU Speed Of Light Throughput","DRAM Throughput","%","88.1"\n'
        '"1","k","Memory Workload Analysis","Local Memory Spilling Request Overhead","%","no data"\n'
    )
    (k,) = ncu.parse_csv(text)
    assert k.dram_pct == 88.1
    assert [m.value for m in k.metrics if m.name.startswith("Local Memory")] == [None]


def test_lab_ncu_says_in_one_line_when_a_fresh_export_does_not_parse(tmp_path, monkeypatch, capsys):
    """A profile whose export the parser refuses: one line naming the kept CSV, exit 2, no traceback."""

    def refuse(target, out, cfg):
        raise ncu.NcuCsvError("line 34, column Metric Value (X): 'zzz' is not a number (unit '%')")

    monkeypatch.setattr(ncu, "profile", refuse)
    assert main(["ncu", "--cmd", "true", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ncu_details.csv" in err and "'zzz' is not a number" in err
    assert "Traceback" not in err


def test_bad_csv_is_a_clear_error():
    with pytest.raises(ncu.NcuCsvError, match="no ncu CSV header"):
        ncu.parse_csv("==PROF== nothing profiled\n")
    with pytest.raises(ncu.NcuCsvError, match="lacks column"):
        ncu.parse_csv('"Kernel Name","Metric Name","Metric Value"\n"k","Duration","1"\n')  # no ID


def _replace_value(text: str, metric: str, value: str) -> str:
    """The sample with the first value of `metric` replaced by `value`."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if f'"{metric}"' in line:
            fields = next(csv.reader([line]))
            fields[fields.index(metric) + 2] = value
            buf = io.StringIO()
            csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow(fields)
            lines[i] = buf.getvalue()
            return "".join(lines)
    raise AssertionError(metric)


@pytest.mark.parametrize(
    ("metric", "value", "why"),
    [
        ("DRAM Throughput", "-500", "finite number >= 0"),
        ("DRAM Throughput", "nan", "finite number >= 0"),
        ("Duration", "inf", "finite number >= 0"),
        ("Achieved Occupancy", "-0.5", "finite number >= 0"),
        ("Duration", "fast", "not a number (unit 'usecond')"),
        ("Registers Per Thread", "1e999", "finite number >= 0"),
    ],
)
def test_damaged_values_name_the_line_and_column(metric, value, why):
    text = _replace_value(SAMPLE.read_text(), metric, value)
    with pytest.raises(ncu.NcuCsvError, match="line \\d+, column Metric Value") as err:
        ncu.parse_csv(text)
    assert why in str(err.value) and metric in str(err.value)


def test_truncated_files_are_refused_or_read_correctly():
    """Cut anywhere in the body, the file is refused, or (cut between whole metrics, or in
    the empty rule fields after one) read with exactly the values the whole file has."""
    text = SAMPLE.read_text()
    whole = {k.id: k.metrics for k in ncu.parse_csv(text)}
    cuts = range(text.index('"0","41207"') + 1, len(text) - 1, 37)
    refused = 0
    for cut in cuts:
        try:
            kernels = ncu.parse_csv(text[:cut])
        except ncu.NcuCsvError as exc:
            assert re.search(r"line \d+", str(exc))
            refused += 1
            continue
        for k in kernels:
            assert k.metrics == whole[k.id][: len(k.metrics)]
    assert refused > 0.8 * len(cuts)


def test_wrong_columns_are_refused():
    header = '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
    with pytest.raises(ncu.NcuCsvError, match="line 2: 4 fields for 5 columns \\(at least 5"):
        ncu.parse_csv(header + '"0","k","Duration","usecond"\n')
    with pytest.raises(ncu.NcuCsvError, match="line 2: 6 fields for 5 columns"):
        ncu.parse_csv(header + '"0","k","Duration","usecond","1","x"\n')
    with pytest.raises(ncu.NcuCsvError, match="column ID"):
        ncu.parse_csv(header + '"zero","k","Duration","usecond","1"\n')
    with pytest.raises(ncu.NcuCsvError, match="repeats a column"):
        ncu.parse_csv('"ID","Kernel Name","Metric Name","Metric Value","ID"\n"0","k","Duration","1","0"\n')
    (k,) = ncu.parse_csv(header + '"0","k","Function Cache Configuration","","CachePreferNone"\n')
    assert k.metrics[0].value is None  # a word where no unit asks for a number is a value, not damage


def test_lab_ncu_refuses_a_damaged_csv_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text(_replace_value(SAMPLE.read_text(), "DRAM Throughput", "-500"))
    assert main(["ncu", "--csv", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(f"lab ncu: argument --csv: {bad}: line ") and "DRAM Throughput" in err


_SAMPLE_TEXT = SAMPLE.read_text()


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400) | st.binary(max_size=400).map(lambda b: b.decode("latin-1")))
def test_fuzz_random_text_is_parsed_or_refused_with_the_parsers_error(text):
    _parsed_or_refused(text)
    _parsed_or_refused(_SAMPLE_TEXT.splitlines()[4] + "\n" + text)  # behind a real header


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    cut=st.integers(0, len(_SAMPLE_TEXT)),
    at=st.integers(0, len(_SAMPLE_TEXT) - 1),
    junk=st.text(max_size=8),
)
def test_fuzz_damaged_samples_are_parsed_or_refused_with_the_parsers_error(cut, at, junk):
    _parsed_or_refused(_SAMPLE_TEXT[:cut])
    _parsed_or_refused(_SAMPLE_TEXT[:at] + junk + _SAMPLE_TEXT[at + 1 :])


def _parsed_or_refused(text: str) -> None:
    """parse_csv raises only NcuCsvError; what it accepts is sane: finite values >= 0."""
    try:
        kernels = ncu.parse_csv(text)
    except ncu.NcuCsvError as exc:
        assert str(exc) and "\n" not in str(exc).strip()
        return
    for k in kernels:
        assert k.id.isdigit() and k.name.strip()
        for m in k.metrics:
            assert m.value is None or (math.isfinite(m.value) and m.value >= 0)
        k.verdict()
        k.summary()


def test_profile_command():
    cfg = ncu.NcuConfig(
        sections=("SpeedOfLight",),
        metrics=("a.b", "c.d"),
        kernel_regex="softmax",
        launch_skip=2,
        launch_count=1,
        profile_from_start=False,
    )
    cmd = ncu.profile_command(["python3", "x.py"], Path("r.ncu-rep"), cfg)
    joined = " ".join(cmd)
    assert cmd[:3] == ["ncu", "--clock-control", "none"]
    for part in (
        "--section SpeedOfLight",
        "--metrics a.b,c.d",
        "--kernel-name regex:softmax",
        "--launch-skip 2",
        "--launch-count 1",
        "--profile-from-start off",
        "--export r.ncu-rep",
    ):
        assert part in joined
    assert cmd[-2:] == ["python3", "x.py"]
    assert ncu.export_command(Path("r.ncu-rep")) == [
        "ncu",
        "--import",
        "r.ncu-rep",
        "--csv",
        "--page",
        "details",
    ]
    assert ncu.STALL_METRIC.format("wait") in ncu.DEFAULT_METRICS
    target = ncu.launch_target("cuda.v3_fused", "16384x4096", "float32")
    assert target[1:] == ["-m", "labtools.ncu_cases", "launch", "cuda.v3_fused", "16384x4096", "float32"]


def test_cases_are_every_accepted_combination_in_order():
    from labtools import registry

    names = [i.name for i in registry.implementations() if i.op == "softmax"][:2]
    shapes, dtypes = ((4, 8), (2, 16)), ("float32", "float64")
    got = ncu.cases(",".join(names), "4x8,2x16", "float32,float64")
    expected = [
        (n, s, d) for n in names for s in shapes for d in dtypes if registry.get(n).accepts(s, d)
    ]  # fmt: skip
    assert got and got == expected


def test_label_cases_splits_the_profiles_at_the_markers():
    def k(i, name):
        return ncu.KernelProfile(str(i), name)

    case_list = [("a", (4, 8), "float32"), ("b", (2, 16), "bfloat16")]
    kernels = [
        k(0, "at::cuda::spin_kernel(long)"),
        k(1, "fwd"),
        k(2, "spin_kernel"),
        k(3, "bwd1"),
        k(4, "bwd2"),
    ]
    labelled = ncu.label_cases(kernels, case_list)
    assert [(x.name, x.info["case"]) for x in labelled] == [
        ("fwd", "a 4x8 float32"),
        ("bwd1", "b 2x16 bfloat16"),
        ("bwd2", "b 2x16 bfloat16"),
    ]
    assert "a 4x8 float32: fwd" in ncu.format_table(labelled)
    # markers that do not match the cases: nothing is labelled or dropped
    for unmatched in (
        [k(0, "spin_kernel"), k(1, "x")],
        [k(0, "x"), k(1, "spin_kernel"), k(2, "spin_kernel")],
    ):
        assert ncu.label_cases(unmatched, case_list) == unmatched
        assert not any("case" in x.info for x in unmatched)


def test_a_run_that_profiles_no_kernel_returns_none_not_an_old_report(tmp_path):
    """ncu writes no report when nothing was profiled (a command that launched no kernel, or a
    filter that matched none); an earlier run's report in the folder must not be read instead."""
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\necho '==WARNING== No kernels were profiled.'\n")
    fake.chmod(0o755)
    out = tmp_path / "run"
    out.mkdir()
    (out / "ncu.ncu-rep").write_bytes(b"an earlier run's report")
    assert ncu.profile(["true"], out, ncu.NcuConfig(ncu=str(fake))) == ([], None)
    assert not (out / "ncu.ncu-rep").exists()


def test_profile_without_ncu_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found on PATH"):
        ncu.profile(["true"], tmp_path, ncu.NcuConfig(ncu="ncu-is-not-installed-here"))


def test_lab_ncu_parses_a_csv(capsys):
    assert main(["ncu", "--csv", str(SAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "softmax_fused_kernel: memory-bound" in out and "long_scoreboard" in out
    assert main(["ncu", "--csv", str(SAMPLE), "--json"]) == 0
    summaries = json.loads(capsys.readouterr().out)
    assert [s["registers_per_thread"] for s in summaries] == [18, 32, 40, 26]
    assert summaries[1]["top_stalls"][0] == ["long_scoreboard", 9.81]


@pytest.mark.gpu
def test_launch_target_runs_a_registered_implementation_once():
    import subprocess

    target = ncu.launch_target("torch.softmax.cuda", "512x600", "float32")
    subprocess.run(target, check=True, timeout=300)


@pytest.mark.gpu
def test_lab_ncu_profiles_a_registered_implementation(tmp_path, capsys):
    import shutil

    if shutil.which("ncu") is None:
        pytest.skip("ncu is not on PATH")
    args = ["--shape", "16384x4096", "--dtype", "float32,bfloat16", "--out", str(tmp_path)]
    assert main(["ncu", "--impl", "torch.softmax.cuda", *args]) == 0
    out = capsys.readouterr().out
    assert "bound" in out or "under-utilized" in out
    assert "torch.softmax.cuda 16384x4096 bfloat16: " in out
    raw = ncu.parse_csv((tmp_path / "ncu_details.csv").read_text())
    kernels = ncu.label_cases(raw, ncu.cases("torch.softmax.cuda", "16384x4096", "float32,bfloat16"))
    # only the profiled launches, not the warm-up or the input generation; markers dropped
    assert len(raw) == 4 and len(kernels) == 2
    assert [k.info["case"] for k in kernels] == [
        "torch.softmax.cuda 16384x4096 float32",
        "torch.softmax.cuda 16384x4096 bfloat16",
    ]
    for k in kernels:
        assert k.duration_us > 0 and k.dram_pct is not None and k.stalls
