"""scripts/in_place.py: packages importable and their metadata visible through a private
temporary folder (mkdtemp: fresh name, mode 0700) that is removed afterwards; a folder
planted at the old predictable path is never used; the child's exit status comes back."""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "in_place.py"

PROBE = """
import json, os, stat, sys, importlib.metadata as md
meta = [p for p in os.environ["PYTHONPATH"].split(os.pathsep) if "kernel-lab-inplace-" in p]
info = {"meta": meta, "mode": [stat.S_IMODE(os.stat(m).st_mode) for m in meta],
        "listing": [sorted(os.listdir(m)) for m in meta],
        "plugins": sorted(ep.name for ep in md.entry_points(group="labtools.plugins")),
        "cwd": os.getcwd()}
print(json.dumps(info))
sys.exit(int(sys.argv[1]))
"""


def run_in_place(tmp_path, *args, env_extra=None):
    env = {**os.environ, "TMPDIR": str(tmp_path), **(env_extra or {})}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)  # fmt: skip


def test_private_metadata_folder_is_used_then_removed(tmp_path):
    # What an attacker would plant at the old predictable path.
    planted = tmp_path / f"kernel-lab-inplace-{os.getuid()}"
    planted.mkdir()
    (planted / "sitecustomize.py").write_text("print('PLANTED CODE RAN')\n")

    run = run_in_place(tmp_path, "python", "-c", PROBE, "3")
    assert run.returncode == 3, run.stderr  # the child's status
    assert "PLANTED CODE RAN" not in run.stdout + run.stderr
    info = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(info["meta"]) == 1
    meta = Path(info["meta"][0])
    assert meta.parent == tmp_path and meta != planted
    assert info["mode"] == [0o700]
    assert any(name.endswith("minigpt_np-0.1.0.dist-info") for name in info["listing"][0]), info["listing"]
    assert not any(name.endswith(".tmp") for name in info["listing"][0])
    assert {"minigpt_torch", "kernels_triton", "kernels_cuda"} <= set(info["plugins"])
    assert Path(info["cwd"]) == ROOT
    assert not meta.exists()  # removed after the command
    assert sorted(p.name for p in tmp_path.iterdir()) == [planted.name]


def test_unknown_command_prints_usage_and_exits_2(tmp_path):
    run = run_in_place(tmp_path, "rm", "-rf", "/")
    assert run.returncode == 2 and "in_place.py pytest" in run.stderr
    assert list(tmp_path.iterdir()) == []


def test_test_in_place_runs_pytest(tmp_path):
    """scripts/test-in-place, with this interpreter, runs a small test file."""
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHON": sys.executable}
    run = subprocess.run([str(ROOT / "scripts" / "test-in-place"), "-q", "-p", "no:cacheprovider",
                          "tests/minigpt_np/test_np_grammar.py", "-k", "tokenizer or vocab"],
                         capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert " passed" in run.stdout
    assert list(tmp_path.iterdir()) == []
    mode = stat.S_IMODE((ROOT / "scripts" / "test-in-place").stat().st_mode)
    assert mode & 0o100
