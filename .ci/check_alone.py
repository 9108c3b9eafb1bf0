#!/usr/bin/env python3
"""Install each kernel-lab wheel alone into a fresh venv and use it, as someone reusing one
package would; fail if anything that should be a sibling is not ours.

    python3 .ci/check_alone.py dist [--json PATH]

For each case below: a new venv (`uv venv`), then `uv pip install --find-links dist NAME`
(kernel-lab siblings can only come from dist/, everything else from the index), then:
- every installed distribution named kernel-lab-*, or providing one of our import
  packages, or carrying one of the names our packages used to have, must be one of the
  five wheels in dist/: same name and version, and every file that wheel's RECORD lists
  installed with the same hash (so a same-named package from an index fails);
- the package imports and reports its __version__;
- its command line, if it has one, runs; with a CUDA extra, one kernel compiles (NVRTC);
- the venv's size on disk and the size of the wheels it took (see install_sizes.py).
Exit status 1 if any case fails; everything is printed either way.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import install_sizes  # beside this file

OURS = {
    "kernel-lab-labtools": "labtools",
    "kernel-lab-kernels-cuda": "kernels_cuda",
    "kernel-lab-kernels-triton": "kernels_triton",
    "kernel-lab-minigpt-np": "minigpt_np",
    "kernel-lab-minigpt-torch": "minigpt_torch",
}
# The names these packages had before they were prefixed; on PyPI some belong to others.
OLD_NAMES = {"labtools", "kernels-cuda", "kernels-triton", "minigpt-np", "minigpt-torch"}

COMPILE_ONE = [
    "python",
    "-c",
    "from kernels_cuda import codegen, vecadd; s = vecadd.specializations()[0]; "
    "c = codegen.compile_spec(s, 'sm_90'); "
    "print(s.name, 'for sm_90 by NVRTC %d.%d:' % codegen.nvrtc_version(), c.resources.registers, 'registers')",
]

# (requirement to install, import name, commands run with the venv's bin/ first on PATH)
CASES = [
    ("kernel-lab-minigpt-np", "minigpt_np", [["minigpt-np", "topk", "Yesterday I", "-k", "5", "--json"]]),
    ("kernel-lab-labtools", "labtools", [["lab", "--version"], ["lab", "env"]]),
    ("kernel-lab-kernels-cuda", "kernels_cuda", []),
    ("kernel-lab-kernels-triton", "kernels_triton", []),
    (
        "kernel-lab-minigpt-torch",
        "minigpt_torch",
        [["minigpt-torch", "--help"], ["minigpt-torch", "topk", "Yesterday I", "-k", "5", "--json"]],
    ),
    # An extra that brings a sibling (labtools must come from dist/ here too), and one that
    # brings CuPy and NVRTC: a kernel compiles, no GPU needed.
    (
        "kernel-lab-kernels-cuda[cuda13,lab]",
        "kernels_cuda",
        [["lab", "--version"], ["lab", "env"], COMPILE_ONE],
    ),
    ("kernel-lab-kernels-cuda[cuda12]", "kernels_cuda", [COMPILE_ONE]),
]


def normalize(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def wheel_record(wheel: Path) -> tuple[str, str, dict[str, str]]:
    """(name, version, {path: 'sha256=...'}) of a wheel, from its METADATA and RECORD."""
    with zipfile.ZipFile(wheel) as zf:
        info = next(n.split("/")[0] for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        meta = zf.read(f"{info}/METADATA").decode()
        fields = dict(line.split(": ", 1) for line in meta.splitlines() if ": " in line and line[0] != " ")
        rows = csv.reader(io.StringIO(zf.read(f"{info}/RECORD").decode()))
        hashes = {r[0]: r[1] for r in rows if r and r[1] and ".dist-info/" not in r[0]}
    return normalize(fields["Name"]), fields["Version"], hashes


def installed(python: Path) -> list[dict]:
    """Every distribution in the venv: name, version, top-level names, {path: hash}."""
    script = r"""
import csv, importlib.metadata as m, io, json
out = []
for d in m.distributions():
    rows = list(csv.reader(io.StringIO(d.read_text("RECORD") or "")))
    files = {r[0]: r[1] for r in rows if len(r) > 1 and r[1]}
    top = sorted({r[0].split("/")[0].removesuffix(".py") for r in rows if r and ".dist-info" not in r[0]
                  and not r[0].startswith("..")})
    out.append({"name": d.metadata["Name"], "version": d.version, "top": top, "files": files})
print(json.dumps(out))
"""
    return json.loads(
        subprocess.run([str(python), "-c", script], capture_output=True, text=True, check=True).stdout
    )


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256(path.read_bytes()).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def provenance_errors(python: Path, site: Path, wheels: dict[str, tuple[str, dict[str, str]]]) -> list[str]:
    errors = []
    for d in installed(python):
        name = normalize(d["name"])
        ours_by_import = set(d["top"]) & set(OURS.values())
        if not (name.startswith("kernel-lab-") or name in OLD_NAMES or ours_by_import):
            continue
        if name not in wheels:
            errors.append(
                f"{d['name']} {d['version']} is installed (provides {sorted(ours_by_import) or d['top']}) "
                "but is not one of our wheels in dist/"
            )
            continue
        version, hashes = wheels[name]
        if d["version"] != version:
            errors.append(f"{name} {d['version']} installed, but dist/ holds {version}")
            continue
        for path, expected in hashes.items():
            target = site / path
            if not target.is_file() or file_sha256(target) != expected:
                errors.append(f"{name}: {path} differs from the wheel in dist/ (not installed from it)")
                break
    return errors


def run_case(
    requirement: str, module: str, commands: list[list[str]], dist: Path, wheels, lock_wheels
) -> dict:
    result = {"requirement": requirement, "errors": [], "outputs": []}
    venv = Path(tempfile.mkdtemp(prefix="kernel-lab-alone-")) / "venv"
    python = venv / "bin" / "python"
    t0 = time.perf_counter()
    subprocess.run(["uv", "venv", "--quiet", str(venv)], check=True)
    install = subprocess.run(
        # uv's cache keeps wheels by name and version: refresh ours, or a wheel built before
        # this one with the same version would be installed (the check below catches that).
        ["uv", "pip", "install", "--quiet", "--python", str(python), "--find-links", str(dist)]
        + [arg for name in OURS for arg in ("--refresh-package", name)]
        + [requirement],
        capture_output=True,
        text=True,
    )
    result["install_seconds"] = round(time.perf_counter() - t0, 1)
    if install.returncode != 0:
        result["errors"].append(f"install failed:\n{install.stderr.strip()}")
        return result
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    result["errors"] += provenance_errors(python, site, wheels)
    result["distributions"] = sorted(
        f"{d['name']}=={d['version']}"
        for d in installed(python)
        if normalize(d["name"]).startswith("kernel-lab-")
    )
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    env.pop("VIRTUAL_ENV", None)
    env["KERNELS_CUDA_CACHE_DIR"] = str(venv.parent / "kernels-cuda-cache")  # compile, do not reuse
    steps = [
        [str(python), "-c", f"import {module}; print('import {module}:', {module}.__version__)"],
        *commands,
    ]
    for cmd in steps:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=venv.parent)
        shown = " ".join(cmd[1:] if cmd[0] == str(python) else cmd)
        result["outputs"].append(
            {"command": shown, "returncode": proc.returncode, "stdout": proc.stdout.strip()}
        )
        if proc.returncode != 0:
            result["errors"].append(f"`{shown}` exited {proc.returncode}:\n{proc.stderr.strip()[-2000:]}")
    result["venv_bytes"] = install_sizes.venv_bytes(venv)
    dists = install_sizes.installed(venv)
    result["download_bytes"], result["not_in_lock"] = install_sizes.download_bytes(dists, lock_wheels)
    subprocess.run(["rm", "-rf", str(venv.parent)], check=False)
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dist", type=Path, help="folder holding the five wheels")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    dist = args.dist.resolve()
    wheels = {}
    for whl in sorted(dist.glob("*.whl")):
        name, version, hashes = wheel_record(whl)
        wheels[name] = (version, hashes)
    if set(wheels) != set(OURS):
        print(
            f"check_alone: {dist} holds wheels for {sorted(wheels)}, expected {sorted(OURS)}", file=sys.stderr
        )
        return 1
    lock_wheels = install_sizes.lock_wheels(Path(__file__).resolve().parents[1] / "uv.lock")
    results, failed = [], 0
    for requirement, module, commands in CASES:
        r = run_case(requirement, module, commands, dist, wheels, lock_wheels)
        results.append(r)
        size = "-"
        if "venv_bytes" in r:
            size = f"{r['venv_bytes'] / 1e6:.0f} MB on disk, {r['download_bytes'] / 1e6:.0f} MB of wheels"
            size += f" (not in uv.lock: {', '.join(r['not_in_lock'])})" if r["not_in_lock"] else ""
        print(f"\n== {requirement}: venv {size}, installed in {r['install_seconds']} s")
        print("   kernel-lab distributions: " + ", ".join(r.get("distributions", [])))
        for out in r["outputs"]:
            lines = out["stdout"].splitlines()
            head = "\n      ".join(lines[:12]) + (
                f"\n      ... ({len(lines) - 12} more lines)" if len(lines) > 12 else ""
            )
            print(f"   $ {out['command']}  -> exit {out['returncode']}\n      {head}")
        for e in r["errors"]:
            print(f"   FAIL: {e}")
        failed += bool(r["errors"])
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\ncheck_alone: {len(CASES) - failed} of {len(CASES)} cases ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
