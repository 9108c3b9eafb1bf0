"""The lab command line: one test per user-facing behaviour; they share the fixtures at the top."""

import argparse
import json
import random
import subprocess
import sys

import pytest
from cli_helpers import assert_one_line_error, lab
from labtools.cli import main


def test_lab_env_table(capsys):
    assert main(["env"]) == 0
    out = capsys.readouterr().out
    for word in ("python", "numpy", "CUDA", "Triton interpreter", "CPU (NumPy)"):
        assert word in out


def test_lab_env_json_is_machine_readable():
    out = subprocess.run(
        [sys.executable, "-m", "labtools.cli", "env", "--json"], check=True, capture_output=True, text=True
    ).stdout
    env = json.loads(out)
    assert env["python"].count(".") == 2
    assert set(env["versions"]) >= {"numpy", "torch", "triton", "cupy"}
    assert env["backends"]["CPU (NumPy)"]["available"] is True
    for d in env["devices"]:
        assert {"name", "compute_capability", "memory_gib", "sm_count"} <= set(d)


def test_lab_bench_then_lab_roofline(fake_registry, tmp_path, capsys):
    sweep_json = tmp_path / "sweep.json"
    rc = main(
        [
            "bench",
            "softmax",
            "--device",
            "cpu",
            "--shapes",
            "16x256,8x2048",
            "--dtypes",
            "float32",
            "--impls",
            "tuned,fake.short_rows",
            "--time-cap",
            "0.05",
            "--rounds",
            "2",
            "--no-ceiling",
            "--json",
            str(sweep_json),
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "vs F.ref" in out and "fake.tuned" in out and f"wrote {sweep_json}" in out
    assert "skipped: fake.short_rows: supports() rejects this shape -- 8x2048 float32" in out
    sweep = json.loads(sweep_json.read_text())
    assert sweep["command"].startswith("lab bench softmax --device cpu")
    assert {r["impl"] for r in sweep["records"]} == {"fake.ref", "fake.tuned", "fake.short_rows"}
    assert sweep["ceilings"] is None and all(r["frac_of_copy"] is None for r in sweep["records"])
    assert sweep["config"]["rounds"] == 2

    assert main(["roofline", str(sweep_json), "--shape", "16x256", "--out", str(tmp_path / "plots")]) == 0
    written = {p.name for p in (tmp_path / "plots").iterdir()}
    plots = {"roofline.png", "roofline_16x256.png", "roofline_8x2048.png", "frac_of_copy.png"}
    assert written == plots | {"run.json", "REPORT.md"}  # the lock is gone
    report = (tmp_path / "plots" / "REPORT.md").read_text()
    assert "[roofline.png](roofline.png)" in report and "[frac_of_copy.png](frac_of_copy.png)" in report


def test_lab_bench_reports_failures_in_its_exit_status(fake_registry, tmp_path, capsys):
    rc = main(
        [
            "bench",
            "softmax",
            "--device",
            "cpu",
            "--shapes",
            "8x64",
            "--dtypes",
            "float32",
            "--impls",
            "crash",
            "--time-cap",
            "0.05",
            "--no-ceiling",
            "--json",
            str(tmp_path / "s.json"),
        ]
    )
    assert rc == 1
    assert "FAILED: fake.crash: RuntimeError: launch failed" in capsys.readouterr().out


def test_lab_bench_b512_is_one_point(fake_registry, tmp_path):
    out = tmp_path / "b512.json"
    assert (
        main(
            [
                "bench",
                "softmax",
                "--b512",
                "--device",
                "cpu",
                "--impls",
                "tuned",
                "--time-cap",
                "0.05",
                "--no-ceiling",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    records = json.loads(out.read_text())["records"]
    assert {(tuple(r["shape"]), r["dtype"]) for r in records} == {((512, 600), "float32")}


# --- user mistakes: one line, exit 2, no traceback ------------------------------------------


@pytest.fixture
def attack_dir(tmp_path):
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "no_records.json").write_text(
        json.dumps(
            {
                "kind": "labtools.sweep",
                "op": "softmax",
                "device": "cpu",
                "date": "2026-01-01T00:00:00+00:00",
                "config": {},
                "environment": {},
                "records": [],
                "skipped": [],
                "failed": [],
            }
        )
    )
    (tmp_path / "random.bin").write_bytes(random.Random(7).randbytes(512))
    (tmp_path / "a_file").write_text("x")
    return tmp_path


ATTACKS = [
    (["bench", "softmax", "--shapes", "0x5"], ["--shapes", "0x5", ">= 1"]),
    (["bench", "softmax", "--shapes", "4096"], ["--shapes", "MxN"]),
    (["bench", "softmax", "--shapes", "100000x100000"], ["--shapes", "at most"]),
    (["bench", "softmax", "--dtypes", "float128"], ["--dtypes", "float128", "float32, float16, bfloat16"]),
    (["bench", "softmax", "--time-cap", "nan"], ["--time-cap", "finite number > 0"]),
    (["bench", "softmax", "--time-cap", "-1"], ["--time-cap", "> 0"]),
    (["bench", "softmax", "--seed", "x"], ["--seed", "whole number"]),
    (["bench", "softmax", "--rounds", "0"], ["--rounds", ">= 1"]),
    (["bench", "nosuchop"], ["op", "invalid choice"]),
    (["bench", "softmax", "--device", "tpu"], ["--device", "invalid choice"]),
    (["run", "--time-cap", "inf"], ["--time-cap", "finite"]),
    (["run", "--seed", "-3"], ["--seed", ">= 0"]),
    (["roofline", "empty.json"], ["sweep", "empty.json", "not JSON"]),
    (["roofline", "list.json"], ["sweep", "not a sweep"]),
    (["roofline", "no_records.json"], ["sweep", "no records"]),
    (["roofline", "missing.json"], ["sweep", "missing.json", "no such file"]),
    (["ncu", "--csv", "random.bin"], ["--csv", "random.bin", "not text"]),
    (["ncu", "--csv", "missing.csv"], ["--csv", "no such file"]),
    (["ncu", "--csv", "empty.json"], ["--csv", "no ncu CSV header"]),
    (["ncu", "--impl", "x", "--shape", "0x1"], ["--shape", ">= 1"]),
    (["ncu", "--impl", "x", "--launch-count", "0"], ["--launch-count", ">= 1"]),
    (["inductor", "dump", "tinyhead", "--mode", "fast"], ["--mode", "max-autotune"]),
    (["inductor", "report", "--out", "nowhere"], ["--out", "no such folder"]),
    (["nosuchcommand"], ["invalid choice"]),
    (["bench", "softmax", "--out", "a_file/sub"], ["--out", "cannot create"]),
    (["bench", "softmax", "--json", "a_file/sub.json"], ["--json", "cannot create"]),
]


@pytest.mark.parametrize(
    ("argv", "words"), ATTACKS, ids=lambda v: " ".join(v) if isinstance(v[0], str) else ""
)
def test_user_mistakes_are_one_line_and_exit_2(fake_registry, attack_dir, monkeypatch, capsys, argv, words):
    monkeypatch.chdir(attack_dir)
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse's errors exit; the command's are returned
        rc = exc.code
    out, err = capsys.readouterr()
    assert_one_line_error(subprocess.CompletedProcess(argv, rc, out, err), *words)


def test_a_mistake_in_a_real_process(attack_dir):
    """The same through the module a user's `lab` runs, in a process of its own."""
    assert_one_line_error(lab("bench", "softmax", "--shapes", "0x5", cwd=attack_dir), "--shapes", "0x5")
    assert_one_line_error(lab("ncu", "--csv", "random.bin", cwd=attack_dir), "--csv", "not text")


def test_readme_gpu_impls_on_cpu_say_what_exists_and_what_runs_here(attack_dir):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device: the CUDA implementations are available here")
    line = assert_one_line_error(lab("bench", "softmax", "--impls", "fused,Triton", cwd=attack_dir))
    assert "fused, Triton" in line and "cuda only" in line and "available on cpu: " in line
    assert "F.softmax (torch.softmax.cpu)" in line
    line = assert_one_line_error(lab("bench", "softmax", "--impls", "Tritan", cwd=attack_dir))
    assert "no softmax implementation named Tritan" in line and "Triton (triton.softmax)" in line
    line = assert_one_line_error(lab("bench", "softmax", "--device", "cuda", cwd=attack_dir))
    assert "--device" in line and "no CUDA device" in line


def test_debug_shows_the_traceback(attack_dir):
    proc = lab("--debug", "roofline", "empty.json", cwd=attack_dir)
    assert proc.returncode != 0 and "Traceback" in proc.stderr and "UsageError" in proc.stderr
    proc = lab("roofline", "empty.json", cwd=attack_dir, env_extra={"LAB_DEBUG": "1"})
    assert "Traceback" in proc.stderr
    proc = lab("roofline", "empty.json", "--debug", cwd=attack_dir)
    assert "Traceback" in proc.stderr


def test_mistakes_are_found_before_any_work(fake_registry, tmp_path, monkeypatch, capsys):
    """A bad --impls or --json is refused before the copy ceiling or the sweep starts."""
    from labtools import ceilings, sweep

    def no_work(*args, **kwargs):
        raise AssertionError("work started before the arguments were checked")

    monkeypatch.setattr(ceilings, "measure", no_work)
    monkeypatch.setattr(sweep, "run_sweep", no_work)
    assert main(["bench", "softmax", "--device", "cpu", "--impls", "gpu"]) == 2
    assert "--impls: gpu run(s) on cuda only" in capsys.readouterr().err
    (tmp_path / "d").mkdir()
    assert main(["bench", "softmax", "--device", "cpu", "--json", str(tmp_path / "d")]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_every_option_has_help_text():
    from labtools.cli import build_parser

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, [*path, name])
            elif not isinstance(action, argparse._HelpAction):
                yield path, action

    missing = [
        f"lab {' '.join(p)} {'/'.join(a.option_strings) or a.dest}"
        for p, a in walk(build_parser(), [])
        if not a.help
    ]
    assert not missing, missing


# --- the table renderer ------------------------------------------------------------------------


def test_tables_plain_markdown_and_rich():
    from labtools.tables import render

    rows = [("fused", 12.5, None), None, ("F.softmax | ref", 3, "x")]
    plain = render(("impl", "us", "note"), rows, style="plain").splitlines()
    assert plain[0] == "impl" + " " * 11 + "    us  note" and set(plain[1]) == {"-"}
    assert plain[2] == "fused" + " " * 10 + "  12.5  -"  # numbers to the right, None as "-"
    assert plain[3] == ""  # the group break
    assert plain[4] == "F.softmax | ref     3  x"
    md = render(("impl", "us", "note"), rows, style="markdown").splitlines()
    assert md == [
        "| impl | us | note |",
        "|---|---:|---|",
        "| fused | 12.5 | - |",
        "| F.softmax \\| ref | 3 | x |",
    ]
    rich = render(("impl", "us", "note"), rows, style="rich")  # rich if installed, else the plain table
    assert "fused" in rich and "12.5" in rich and "F.softmax | ref" in rich
    with pytest.raises(ValueError, match="2 cells for 3 columns"):
        render(("a", "b", "c"), [(1, 2)])
    with pytest.raises(ValueError, match="style must be"):
        render(("a",), [(1,)], style="html")
