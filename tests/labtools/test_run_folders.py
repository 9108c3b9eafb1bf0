"""Nothing the user did not ask to replace is replaced (issue 44): committed experiment
results, an earlier run's folder, a project folder named by --out; an interrupted run leaves
no mix of old and new files; a run's file list holds only what it wrote."""

import json
import os
import subprocess
import sys

import pytest
from labtools import runs
from labtools.cli import main

H100_MANIFEST = {"device": "cuda", "gpu": {"model": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}}


def lab(*argv: str, cwd) -> subprocess.CompletedProcess:
    """The real CLI in a child process, in `cwd`."""
    return subprocess.run(
        [sys.executable, "-m", "labtools.cli", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "LAB_DEBUG": "0"},
        timeout=300,
    )


def one_line_error(proc: subprocess.CompletedProcess, *words: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def repo(tmp_path):
    """A checkout with experiment 24's committed results, made on an H100."""
    exp = tmp_path / "experiments" / "24-triton-and-pytorch"
    exp.mkdir(parents=True)
    (tmp_path / "packages").mkdir()
    (exp / "manifest.json").write_text(json.dumps(H100_MANIFEST))
    (exp / "README.md").write_text("the experiment's text, not written by lab run\n")
    (exp / "sweep_softmax.json").write_text('{"committed": true}\n')
    (exp / "roofline_16384x4096.png").write_bytes(b"an H100 plot")
    return tmp_path


def test_experiment_results_of_another_device_are_not_replaced(repo):
    exp = repo / "experiments" / "24-triton-and-pytorch"
    before = snapshot(exp)
    proc = lab("run", "--experiment", "24", "--device", "cpu", "--quick", cwd=repo)
    one_line_error(proc, "--experiment", "NVIDIA H100 80GB HBM3", "cpu", "--overwrite", "--out")
    assert snapshot(exp) == before
    assert sorted(p.name for p in exp.parent.iterdir()) == ["24-triton-and-pytorch"]  # no staging left


def test_overwrite_is_only_for_experiments(tmp_path):
    proc = lab("run", "--overwrite", "--device", "cpu", cwd=tmp_path)
    one_line_error(proc, "--overwrite", "--experiment")


def test_experiment_rerun_on_its_device_replaces_every_output(fake_registry, repo, monkeypatch, capsys):
    exp = repo / "experiments" / "24-triton-and-pytorch"
    (exp / "manifest.json").write_text(json.dumps({"device": "cpu", "gpu": {"model": None}}))
    monkeypatch.chdir(repo)
    argv = ["run", "--experiment", "24", "--device", "cpu", "--quick", "--no-checks", "--time-cap", "0.02"]
    assert main(argv) in (0, 1)  # 1: the fake registry's broken implementations, by design
    names = {p.name for p in exp.iterdir()}
    assert "README.md" in names and (exp / "README.md").read_text().startswith("the experiment's text")
    assert "roofline_16384x4096.png" not in names  # the earlier run's plot is gone, not mixed in
    assert {"manifest.json", "REPORT.md", "run.json", "sweep_softmax.json", "roofline.png"} <= names
    assert json.loads((exp / "manifest.json").read_text())["device"] == "cpu"
    record = json.loads((exp / "run.json").read_text())
    assert "README.md" not in record["files"] and "sweep_softmax.json" in record["files"]
    assert record["folder"] == "24-triton-and-pytorch"
    assert sorted(p.name for p in exp.parent.iterdir()) == ["24-triton-and-pytorch"]


def test_an_interrupted_experiment_run_leaves_the_committed_results(fake_registry, repo, monkeypatch):
    from labtools import job

    exp = repo / "experiments" / "24-triton-and-pytorch"
    before = snapshot(exp)

    def interrupted(cfg, log=None):
        (cfg.out / "sweep_softmax.json").write_text("half a new sweep")
        raise KeyboardInterrupt

    monkeypatch.setattr(job, "run", interrupted)
    monkeypatch.chdir(repo)
    assert main(["run", "--experiment", "24", "--overwrite", "--device", "cpu"]) == 130
    assert snapshot(exp) == before
    assert sorted(p.name for p in exp.parent.iterdir()) == ["24-triton-and-pytorch"]


def earlier_run(folder):
    folder.mkdir()
    (folder / "sweep_softmax.json").write_text('{"records": 12}\n')
    (folder / "run.json").write_text('{"command": "run"}\n')
    (folder / "REPORT.md").write_text("# the earlier run\n")
    return snapshot(folder)


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "softmax", "--b512", "--device", "cpu"],
        ["run", "--quick", "--device", "cpu"],
        ["inductor", "dump", "tinyhead", "--device", "cpu"],
    ],
    ids=["bench", "run", "inductor-dump"],
)
def test_out_naming_an_earlier_run_is_refused(tmp_path, argv):
    before = earlier_run(tmp_path / "run-1")
    proc = lab(*argv, "--out", "run-1", cwd=tmp_path)
    one_line_error(proc, "--out", "run-1", "not empty")
    assert snapshot(tmp_path / "run-1") == before


def test_out_naming_a_project_folder_is_refused(tmp_path):
    (tmp_path / ".venv" / "lib").mkdir(parents=True)
    (tmp_path / ".venv" / "lib" / "x.py").write_text("")
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    proc = lab("bench", "softmax", "--b512", "--device", "cpu", "--out", ".", cwd=tmp_path)
    one_line_error(proc, "--out", "not empty")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".venv", "pyproject.toml"]


def test_roofline_out_naming_an_earlier_run_is_refused(tmp_path, synthetic_sweep):
    sweep = synthetic_sweep().save(tmp_path / "sweep.json")
    before = earlier_run(tmp_path / "plots")
    proc = lab("roofline", str(sweep), "--out", "plots", cwd=tmp_path)
    one_line_error(proc, "--out", "not empty")
    assert snapshot(tmp_path / "plots") == before


def test_a_run_lists_only_the_files_it_wrote(tmp_path):
    folder = tmp_path / "exp25"
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "HEAD").write_text("ref")
    (folder / "data.json").write_text("{}")
    (folder / "REPORT.md").write_text("old")
    with pytest.raises(runs.OutputError, match="not empty"):
        runs.open_run("bench", folder)  # a run folder holds one run's outputs
    with runs.open_run("inductor report", folder, fresh=False) as run:
        run.write_text("REPORT.md", "new")  # rewritten: listed
        run.write_text("plot.png", "png")
        record = json.loads(run.finish(device="cpu").read_text())
    assert record["files"] == ["REPORT.md", "plot.png"]


def test_an_empty_named_folder_is_used(fake_registry, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    argv = ["bench", "softmax", "--device", "cpu", "--shapes", "8x64", "--dtypes", "float32"]
    argv += ["--impls", "tuned", "--time-cap", "0.02", "--no-ceiling", "--out", str(tmp_path / "empty")]
    assert main(argv) == 0
    record = json.loads((tmp_path / "empty" / "run.json").read_text())
    assert record["files"] == ["REPORT.md", "sweep_softmax.json"]


def _as_in_a_terminal() -> None:
    """In the child before exec: SIGINT delivered and handled by default, as for a program started
    from a shell. A child inherits ignored and blocked signals, and in a full run of the suite the
    test process's own SIGINT was seen not to reach the child."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_sigint_during_an_experiment_run_changes_nothing(repo):
    """A real Ctrl-C while `lab run --experiment 24 --overwrite` works: exit 130, the
    committed files as they were, no half-written folder left beside them."""
    import signal
    import time

    exp = repo / "experiments" / "24-triton-and-pytorch"
    before = snapshot(exp)
    argv = ["run", "--experiment", "24", "--overwrite", "--device", "cpu", "--quick", "--no-checks"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "labtools.cli", *argv],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "LAB_DEBUG": "0"},
        preexec_fn=_as_in_a_terminal,
    )
    try:
        deadline = time.monotonic() + 240
        staging = []
        # Into the job, past its start-up: the first sweep's file is written while the second
        # sweep is still to come.
        while not any(staging) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
            staging = [p for p in exp.parent.iterdir() if p.name.startswith(".24-")]
            staging = [p for p in staging if any(p.glob("sweep_*.json"))]
        assert staging, "the run never wrote its first sweep into its staging folder"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted" in err and "Traceback" not in err
    assert snapshot(exp) == before
    assert sorted(p.name for p in exp.parent.iterdir()) == ["24-triton-and-pytorch"]
