"""What the benchmarks' CPU tests share: a benchmark run as a user runs it, and its usage errors' form."""

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def run(script: str, *args: str) -> subprocess.CompletedProcess:
    """python benchmarks/<script> *args, in a child process."""
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args], capture_output=True, text=True, timeout=300
    )


def assert_usage_error(result: subprocess.CompletedProcess, named: str) -> None:
    """Exit 2, one message naming the argument, no traceback."""
    assert result.returncode == 2 and named in result.stderr and "Traceback" not in result.stderr, (
        result.stderr
    )
