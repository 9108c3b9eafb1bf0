"""Fixtures of kernels_triton's tests."""

import json
import os
import subprocess
import sys

import pytest


@pytest.fixture
def without_interpreter():
    """Runs Python `code` in a process without TRITON_INTERPRET, where Triton compiles for a
    GPU target with or without a GPU (sass_tools.py, importable there), and returns the JSON its
    last line of output printed."""

    def run(code: str):
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.dirname(__file__), env.get("PYTHONPATH")]))
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    return run
