"""The five distributions as installed in the workspace: names, versions, licence, typing
marker, sibling requirements, and `lab --version`."""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
# distribution -> (folder under packages/, import name)
DISTRIBUTIONS = {
    "kernel-lab-labtools": ("labtools", "labtools"),
    "kernel-lab-kernels-cuda": ("kernels-cuda", "kernels_cuda"),
    "kernel-lab-kernels-triton": ("kernels-triton", "kernels_triton"),
    "kernel-lab-minigpt-np": ("minigpt-np", "minigpt_np"),
    "kernel-lab-minigpt-torch": ("minigpt-torch", "minigpt_torch"),
}
# Packages that must run without labtools: it may only come in through their [lab] extra.
LAB_OPTIONAL = ("kernel-lab-kernels-cuda", "kernel-lab-kernels-triton", "kernel-lab-minigpt-torch")


def installed(dist: str) -> metadata.Distribution:
    """`dist` as an installer wrote it; scripts/in_place.py's stand-in holds only the name,
    version and entry points, so the checks of full metadata skip there."""
    found = metadata.distribution(dist)
    if found.read_text("RECORD") is None:
        pytest.skip(f"{dist}: metadata from scripts/in_place.py (name, version, entry points only)")
    return found


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_version_from_metadata(dist):
    if dist in ("kernel-lab-kernels-triton", "kernel-lab-minigpt-torch"):
        pytest.importorskip("torch")  # imported by the package itself
    assert importlib.import_module(DISTRIBUTIONS[dist][1]).__version__ == metadata.version(dist)


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_licence_readme_and_typing_marker(dist):
    folder, module = DISTRIBUTIONS[dist]
    meta = installed(dist).metadata
    assert meta["License-Expression"] == "MIT"
    assert (ROOT / "packages" / folder / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    assert (ROOT / "packages" / folder / "src" / module / "py.typed").is_file()
    assert meta.get_payload() or meta["Description"], f"{dist} has no long description (README.md)"


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_sibling_requirements_are_ours_and_bounded(dist):
    for line in installed(dist).requires or []:
        req = Requirement(line)
        if req.name.startswith("kernel-lab-"):
            assert req.name in DISTRIBUTIONS, f"{dist} requires an unknown sibling {req.name}"
            assert str(req.specifier) in (">=0.1,<0.2", "<0.2,>=0.1"), f"{dist}: {line}"
        assert req.name not in {
            "labtools",
            "kernels-cuda",
            "kernels-triton",
            "minigpt-np",
            "minigpt-torch",
        }, f"{dist} requires the generic name {req.name!r}, which PyPI resolves to someone else's package"


@pytest.mark.parametrize("dist", LAB_OPTIONAL)
def test_labtools_only_through_the_lab_extra(dist):
    requires = installed(dist).requires or []
    labtools = [Requirement(r) for r in requires if r.startswith("kernel-lab-labtools")]
    assert labtools, f"{dist} does not offer labtools at all"
    for req in labtools:
        assert req.marker is not None and req.marker.evaluate({"extra": "lab"})
        assert not req.marker.evaluate({"extra": ""}), f"{dist} requires labtools unconditionally"


def test_lab_version():
    out = subprocess.run(
        [sys.executable, "-m", "labtools.cli", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"lab (kernel-lab-labtools) {metadata.version('kernel-lab-labtools')}"


def test_kernel_packages_import_without_labtools_or_matplotlib():
    """Importing them loads neither (labtools is their optional [lab] extra), so they also
    import where neither is installed; .ci/check_alone.py checks that case for real."""
    pytest.importorskip("torch")
    code = (
        "import sys, kernels_cuda, kernels_triton, minigpt_np, minigpt_torch; "
        "print(sorted(m for m in ('labtools', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
