#!/usr/bin/env python3
"""Run kernel-lab with this machine's own python3, installing nothing.

For CUDA machines where nothing can be installed (a cluster image, a container with
torch/triton/cupy already there, no network, no uv). It puts packages/*/src on
PYTHONPATH and writes a .dist-info folder per package (name, version, entry points,
read from its pyproject.toml) into a scratch folder on that path, so entry-point
discovery (labtools' plugin registry) and importlib.metadata work as if installed.

    python3 scripts/in_place.py pytest [PYTEST ARGS...]   # what scripts/test-in-place runs
    python3 scripts/in_place.py lab [LAB ARGS...]         # e.g. lab env, lab run
    python3 scripts/in_place.py python [ARGS...]          # any module or script
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_metadata(dest: Path) -> list[str]:
    names = []
    for pyproject in sorted(ROOT.glob("packages/*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text())["project"]
        name, version = project["name"], project["version"]
        info = dest / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True, exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        groups = dict(project.get("entry-points", {}))
        if project.get("scripts"):
            groups["console_scripts"] = project["scripts"]
        (info / "entry_points.txt").write_text(
            "".join(
                f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
                for g, eps in groups.items()
            )
        )
        names.append(name)
    # A package renamed since the last run leaves its old folder here: drop it, or its
    # entry points would load twice.
    current = {f"{n.replace('-', '_')}-" for n in names}
    for stale in dest.glob("*.dist-info"):
        if not any(stale.name.startswith(c) and stale.name[len(c) :][:1].isdigit() for c in current):
            shutil.rmtree(stale, ignore_errors=True)
    return names


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("pytest", "lab", "python"):
        print(__doc__, file=sys.stderr)
        return 2
    meta = Path(tempfile.gettempdir()) / f"kernel-lab-inplace-{os.getuid()}"
    write_metadata(meta)
    paths = [str(p) for p in sorted(ROOT.glob("packages/*/src"))] + [str(meta)]
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(paths + ([old] if old else []))
    os.chdir(ROOT)
    cmd, rest = argv[0], argv[1:]
    if cmd == "pytest":
        args = [sys.executable, "-m", "pytest", *rest]
    elif cmd == "lab":
        args = [sys.executable, "-m", "labtools.cli", *rest]
    else:
        args = [sys.executable, *rest]
    os.execv(sys.executable, args)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
