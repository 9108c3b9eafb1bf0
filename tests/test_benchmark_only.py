"""`pytest --benchmark-only` shows the benchmarks, not a list of every other test skipped (issue 44)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_benchmark_only_deselects_the_other_tests():
    files = ["tests/labtools/bench_reference.py", "tests/labtools/test_ops.py"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--benchmark-only", "-q", "-p", "no:cacheprovider", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        # a fresh session: not this one's options, nor its xdist worker's (pytest-benchmark turns
        # itself off under xdist)
        env={k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_ADDOPTS", "PYTEST_XDIST"))},
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:]
    assert "Skipping non-benchmark" not in out, out[-3000:]
    assert "deselected" in out and "test_numpy_softmax_cpu" in out  # the benchmark ran and is in the table
    assert "1 passed" in out
