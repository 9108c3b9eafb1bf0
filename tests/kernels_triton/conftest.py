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


@pytest.fixture(params=["one_pass", "looped"])
def row_path(request, monkeypatch):
    """The family's two paths for a row (log_softmax, cross-entropy, token statistics): held whole
    in one pass, or looped over 32-wide tiles, forced by shrinking xent_launch.ROW_SHAPES so
    that the interpreter's small rows take it."""
    from kernels_triton import xent_launch

    whole = 1 if request.param == "looped" else 4096
    monkeypatch.setattr(xent_launch, "ROW_SHAPES", {k: (whole, 32, 4) for k in (2, 4, 8)})
    xent_launch.choose.cache_clear()  # choose() caches by (n, dtype): the shapes just set must be read
    assert xent_launch.choose(64, 4)[1] == (request.param == "one_pass")
    yield request.param
    xent_launch.choose.cache_clear()


@pytest.fixture
def poisoned_empty(monkeypatch):
    """torch.empty returns NaN-filled floats (and -7 in integers): an output left unwritten shows."""
    import torch

    empty = torch.empty

    def poisoned(*args, **kwargs):
        t = empty(*args, **kwargs)
        return t.fill_(float("nan")) if t.is_floating_point() else t.fill_(-7)

    monkeypatch.setattr(torch, "empty", poisoned)
