"""The lab command line's run folders: each command writes its own, an --out that is a symlink or
locked by another run is refused, concurrent processes on one --out each get a folder, and a run
that fails says so in its record."""

import json
import subprocess
import sys

import pytest
from cli_helpers import assert_one_line_error, lab, snapshot
from labtools.cli import main


def _bench_args(*extra: str) -> list[str]:
    return ["bench", "softmax", "--device", "cpu", "--shapes", "8x64", "--dtypes", "float32", "--impls", "tuned",
            "--time-cap", "0.02", "--no-ceiling", *extra]  # fmt: skip


def test_each_command_writes_its_own_run_folder(fake_registry, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--quick", "--device", "cpu", "--time-cap", "0.02", "--no-checks"]) in (0, 1)
    (run_dir,) = (tmp_path / "out").iterdir()
    assert run_dir.name.startswith("run-") and (run_dir / "manifest.json").is_file()
    before = snapshot(run_dir)
    assert main(_bench_args()) == 0
    assert main(["bench", *_bench_args()[1:]]) == 0
    sweeps = sorted((tmp_path / "out").glob("bench-*/sweep_softmax.json"))
    assert len(sweeps) == 2  # two runs of the same command: two folders
    assert main(["roofline", str(run_dir / "sweep_softmax.json")]) == 0
    assert snapshot(run_dir) == before  # byte-identical after bench and roofline
    (roof,) = (tmp_path / "out").glob("roofline-*")
    assert {"roofline.png", "frac_of_copy.png", "run.json", "REPORT.md"} <= set(snapshot(roof))
    record = json.loads((sweeps[0].parent / "run.json").read_text())
    assert (
        record["command"] == "bench"
        and record["device"] == "cpu"
        and record["files"]
        == [
            "REPORT.md",
            "sweep_softmax.json",
        ]
    )
    assert "[sweep_softmax.json](sweep_softmax.json)" in (sweeps[0].parent / "REPORT.md").read_text()
    assert not list((tmp_path / "out").rglob(".lab.lock")) and not list((tmp_path / "out").rglob("*.tmp"))

    capsys.readouterr()
    assert main(["runs"]) == 0
    listing = capsys.readouterr().out
    for name in (run_dir.name, sweeps[0].parent.name, sweeps[1].parent.name, roof.name):
        assert name in listing
    assert main(["runs", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert sorted(r["command"] for r in found) == ["bench", "bench", "roofline", "run"]
    assert all(r["device"].startswith("cpu") for r in found)


def test_a_symlinked_out_is_refused(fake_registry, tmp_path, capsys):
    real = tmp_path / "real"
    real.mkdir()
    (real / "manifest.json").write_text("precious")
    (tmp_path / "link").symlink_to(real)
    assert main(_bench_args("--out", str(tmp_path / "link"))) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert (real / "manifest.json").read_text() == "precious" and len(list(real.iterdir())) == 1


def test_a_locked_out_refuses_a_second_run(fake_registry, tmp_path, capsys):
    from labtools import runs

    out = tmp_path / "shared"
    with runs.open_run("bench", out, command_line="lab bench (the first run)"):
        assert main(_bench_args("--out", str(out))) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "in use by another lab run" in err and "the first run" in err
    assert main(_bench_args("--out", str(out))) == 0  # free again once the first run has ended


def test_two_concurrent_processes_on_one_out(tmp_path, synthetic_sweep):
    """Two real `lab` processes on one --out: exactly one writes, the other fails with one line."""
    script = (
        "import sys, time\n"
        "from labtools import runs\n"
        "with runs.open_run('bench', sys.argv[1], command_line='holder') as r:\n"
        "    print('locked', flush=True); time.sleep(30)\n"
    )
    sweep = synthetic_sweep().save(tmp_path / "sweep.json")
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path / "o")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        proc = lab("roofline", str(sweep), "--out", str(tmp_path / "o"))
        assert_one_line_error(proc, "--out", "in use by another lab run", "holder")
    finally:
        holder.kill()
        holder.wait()


def test_a_run_that_fails_says_so_in_its_record(tmp_path):
    from labtools import runs

    with pytest.raises(RuntimeError), runs.open_run("bench", root=tmp_path) as run:
        run.write_text("partial.json", "{}")
        raise RuntimeError("a bug")
    record = json.loads((run.path / "run.json").read_text())
    assert record["status"] == "error: RuntimeError" and record["files"] == ["REPORT.md", "partial.json"]
    assert not (run.path / ".lab.lock").exists()
    (listed,) = runs.list_runs(tmp_path)
    assert listed["status"] == "error: RuntimeError" and listed["command"] == "bench"
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "run.json").write_text("{not json")
    assert {r["status"] for r in runs.list_runs(tmp_path)} == {
        "error: RuntimeError",
        "unreadable run.json: JSONDecodeError",
    }
