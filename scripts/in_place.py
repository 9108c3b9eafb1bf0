#!/usr/bin/env python3
"""Run kernel-lab with this machine's own python3, installing nothing.

For CUDA machines where nothing can be installed (a cluster image, a container with
torch/triton/cupy already there, no network, no uv). It puts packages/*/src on
PYTHONPATH and writes a .dist-info folder per package (name, version, entry points,
read from its pyproject.toml) into a private temporary folder on that path, so
entry-point discovery (labtools' plugin registry) and importlib.metadata work as if
installed. The command runs as a child process; its exit status is this script's.

    python3 scripts/in_place.py pytest [PYTEST ARGS...]   # what scripts/test-in-place runs
    python3 scripts/in_place.py lab [LAB ARGS...]         # e.g. lab env, lab run
    python3 scripts/in_place.py python [ARGS...]          # any module or script

The metadata folder is made by tempfile.mkdtemp (a fresh, unpredictable name, mode 0700,
owned by the caller) and removed when the command ends: a folder on PYTHONPATH is code
that every Python process on that path runs (sitecustomize.py), so it must never be one
that someone else could have created first.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = ("pytest", "lab", "python")


def atomic_write_text(path: Path, text: str) -> None:
    """A temporary file beside `path`, fsynced, renamed over it: never half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_metadata(dest: Path) -> list[str]:
    names = []
    for pyproject in sorted(ROOT.glob("packages/*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text())["project"]
        name, version = project["name"], project["version"]
        info = dest / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(mode=0o700, exist_ok=True)
        atomic_write_text(info / "METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        groups = dict(project.get("entry-points", {}))
        if project.get("scripts"):
            groups["console_scripts"] = project["scripts"]
        atomic_write_text(
            info / "entry_points.txt",
            "".join(
                f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
                for g, eps in groups.items()
            ),
        )
        names.append(name)
    # A package renamed since the last run leaves its old folder here: drop it, or its
    # entry points would load twice.
    current = {f"{n.replace('-', '_')}-" for n in names}
    for stale in dest.glob("*.dist-info"):
        if not any(stale.name.startswith(c) and stale.name[len(c) :][:1].isdigit() for c in current):
            shutil.rmtree(stale, ignore_errors=True)
    return names


def child_args(argv: list[str]) -> list[str]:
    cmd, rest = argv[0], argv[1:]
    if cmd == "pytest":
        return [sys.executable, "-m", "pytest", *rest]
    if cmd == "lab":
        return [sys.executable, "-m", "labtools.cli", *rest]
    return [sys.executable, *rest]


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__, file=sys.stderr)
        return 2
    meta = Path(tempfile.mkdtemp(prefix="kernel-lab-inplace-"))  # 0700, unpredictable
    try:
        write_metadata(meta)
        paths = [str(p) for p in sorted(ROOT.glob("packages/*/src"))] + [str(meta)]
        env = dict(os.environ)
        old = env.get("PYTHONPATH")
        env["PYTHONPATH"] = os.pathsep.join(paths + ([old] if old else []))
        child = subprocess.Popen(child_args(argv), cwd=ROOT, env=env)

        def forward(signum, frame):
            child.send_signal(signum)

        # SIGINT from a terminal reaches the child by itself (same process group); SIGTERM
        # sent to this process alone is passed on. Either way we wait for the child, then
        # clean up.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, forward)
        status = child.wait()
        return 128 - status if status < 0 else status
    finally:
        shutil.rmtree(meta, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
