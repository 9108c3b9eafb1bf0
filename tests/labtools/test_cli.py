"""The lab command line."""

import json
import subprocess
import sys

from labtools.cli import main


def test_lab_env_table(capsys):
    assert main(["env"]) == 0
    out = capsys.readouterr().out
    for word in ("python", "numpy", "CUDA", "Triton interpreter", "CPU (NumPy)"):
        assert word in out


def test_lab_env_json_is_machine_readable():
    out = subprocess.run([sys.executable, "-m", "labtools.cli", "env", "--json"], check=True,
                         capture_output=True, text=True).stdout
    env = json.loads(out)
    assert env["python"].count(".") == 2
    assert set(env["versions"]) >= {"numpy", "torch", "triton", "cupy"}
    assert env["backends"]["CPU (NumPy)"]["available"] is True
    for d in env["devices"]:
        assert {"name", "compute_capability", "memory_gib", "sm_count"} <= set(d)
