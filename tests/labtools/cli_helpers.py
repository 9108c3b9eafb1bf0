"""What the lab command line's tests share: the real CLI in a child process, the one-line usage
error it must give, and a folder's files as bytes."""

import os
import subprocess
import sys


def lab(*argv: str, cwd=None, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    """The real CLI in a child process (so argparse's exits and stderr are the user's), in `cwd`."""
    env = {**os.environ, "LAB_DEBUG": "0", **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "labtools.cli", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def assert_one_line_error(proc: subprocess.CompletedProcess, *words: str) -> str:
    """A usage error: exit 2, no traceback, one line on stderr holding every word."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def snapshot(folder) -> dict:
    """{path relative to folder: bytes} of every file under it."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }
