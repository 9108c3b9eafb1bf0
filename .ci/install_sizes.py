#!/usr/bin/env python3
"""Download and disk size of installed venvs.

    uv run python .ci/install_sizes.py VENV [VENV ...] [--lock uv.lock] [--json PATH]

disk:     the apparent size of every file under the venv (symlinks not followed), what
          it takes on a disk where nothing is shared with uv's cache.
download: for each distribution installed in the venv, the size uv.lock records for the
          wheel of that name and version this interpreter would pick (the first of its
          compatible tags, in the order it prefers them), summed: the bytes downloaded
          into an empty cache. Workspace packages (built locally) count nothing; distributions
          whose version the lock does not hold are listed apart.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tomllib
from pathlib import Path

from packaging.tags import parse_tag, sys_tags
from packaging.utils import canonicalize_name


def venv_bytes(venv: Path) -> int:
    total = 0
    for root, _, files in os.walk(venv):
        for f in files:
            p = Path(root, f)
            if not p.is_symlink():
                total += p.stat().st_size
    return total


def installed(venv: Path) -> list[tuple[str, str]]:
    """(name, version) of every distribution in the venv, from its .dist-info METADATA."""
    found = []
    for meta in venv.glob("lib/python*/site-packages/*.dist-info/METADATA"):
        fields = {}
        for line in meta.read_text(errors="replace").splitlines():
            if not line:
                break
            key, _, value = line.partition(": ")
            fields.setdefault(key, value)
        found.append((canonicalize_name(fields["Name"]), fields["Version"]))
    return sorted(found)


def lock_wheels(lock: Path) -> dict[tuple[str, str], list[dict]]:
    packages = tomllib.loads(lock.read_text()).get("package", [])
    return {(canonicalize_name(p["name"]), p["version"]): p.get("wheels", []) for p in packages}


def chosen_wheel(wheels: list[dict]) -> dict | None:
    """The wheel this interpreter prefers among `wheels` (each with a url and a size)."""
    rank = {tag: i for i, tag in enumerate(sys_tags())}
    best = None
    for w in wheels:
        filename = w["url"].rsplit("/", 1)[-1]
        tag_text = "-".join(filename.removesuffix(".whl").split("-")[-3:])
        ranks = [rank[t] for t in parse_tag(tag_text) if t in rank]
        if ranks and (best is None or min(ranks) < best[0]):
            best = (min(ranks), w)
    return best[1] if best else None


def download_bytes(dists: list[tuple[str, str]], wheels: dict) -> tuple[int, list[str]]:
    total, unknown = 0, []
    for name, version in dists:
        if wheels.get((name, version)) == []:  # a workspace package: built locally, not downloaded
            continue
        w = chosen_wheel(wheels.get((name, version), []))
        if w is None or "size" not in w:
            unknown.append(f"{name}=={version}")
        else:
            total += w["size"]
    return total, unknown


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("venvs", nargs="+", type=Path)
    parser.add_argument("--lock", type=Path, default=Path("uv.lock"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    wheels = lock_wheels(args.lock)
    results = []
    for venv in args.venvs:
        dists = installed(venv)
        download, unknown = download_bytes(dists, wheels)
        results.append(
            {
                "venv": str(venv),
                "distributions": len(dists),
                "disk_bytes": venv_bytes(venv),
                "download_bytes": download,
                "not_in_lock": unknown,
            }
        )
        r = results[-1]
        print(
            f"{venv}: {r['distributions']} distributions, disk {r['disk_bytes'] / 1e9:.2f} GB, "
            f"download {download / 1e9:.2f} GB (lock {args.lock}); not in the lock: {', '.join(unknown) or 'none'}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
