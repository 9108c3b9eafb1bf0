"""What this machine is and which backends can run on it (`lab env`)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import platform
import sys
from dataclasses import asdict, dataclass, field


@dataclass
class Device:
    index: int
    name: str
    compute_capability: str
    memory_gib: float
    sm_count: int
    l2_mib: float | None = None


@dataclass
class Environment:
    python: str
    platform: str
    versions: dict[str, str | None]
    devices: list[Device] = field(default_factory=list)
    backends: dict[str, tuple[bool, str]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["backends"] = {k: {"available": ok, "why": why} for k, (ok, why) in self.backends.items()}
        return d


def _version(module: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        return None
    try:
        return str(importlib.import_module(module).__version__)
    except Exception as exc:  # noqa: BLE001 - a broken install is worth reporting, not crashing on
        return f"broken ({type(exc).__name__}: {exc})"


def _devices() -> tuple[list[Device], str]:
    """CUDA devices through torch, else CuPy; and a note on how they were found."""
    try:
        import torch

        if torch.cuda.is_available():
            out = []
            for i in range(torch.cuda.device_count()):
                p = torch.cuda.get_device_properties(i)
                l2 = getattr(p, "L2_cache_size", None)
                out.append(
                    Device(
                        i,
                        p.name,
                        f"{p.major}.{p.minor}",
                        round(p.total_memory / 2**30, 1),
                        p.multi_processor_count,
                        None if l2 is None else round(l2 / 2**20, 1),
                    )
                )
            return out, "torch"
    except ImportError:
        pass
    try:
        import cupy

        n = cupy.cuda.runtime.getDeviceCount()
        out = []
        for i in range(n):
            p = cupy.cuda.runtime.getDeviceProperties(i)
            name = p["name"].decode() if isinstance(p["name"], bytes) else p["name"]
            out.append(
                Device(
                    i,
                    name,
                    f"{p['major']}.{p['minor']}",
                    round(p["totalGlobalMem"] / 2**30, 1),
                    p["multiProcessorCount"],
                    round(p["l2CacheSize"] / 2**20, 1),
                )
            )
        return out, "cupy"
    except Exception:  # noqa: BLE001 - no driver, no device: both mean "none here"
        return [], "none"


def collect() -> Environment:
    versions = {m: _version(m) for m in ("numpy", "torch", "triton", "cupy", "matplotlib")}
    devices, _ = _devices()
    has_gpu = bool(devices)
    backends: dict[str, tuple[bool, str]] = {}
    if versions["cupy"] is None:
        backends["CUDA C (CuPy/NVRTC)"] = (False, "cupy is not installed")
    else:
        backends["CUDA C (CuPy/NVRTC)"] = (
            has_gpu,
            "GPU present" if has_gpu else "no CUDA device: compile only",
        )
    if versions["triton"] is None:
        backends["Triton on GPU"] = (False, "triton is not installed")
        backends["Triton interpreter"] = (False, "triton is not installed")
    else:
        backends["Triton on GPU"] = (
            has_gpu and versions["torch"] is not None,
            "GPU present" if has_gpu else "no CUDA device",
        )
        interp = os.environ.get("TRITON_INTERPRET") == "1"
        backends["Triton interpreter"] = (
            True,
            "TRITON_INTERPRET=1 is set"
            if interp
            else "available: set TRITON_INTERPRET=1 before importing triton",
        )
    backends["CPU (NumPy)"] = (versions["numpy"] is not None, "always")
    return Environment(
        python=sys.version.split()[0],
        platform=f"{platform.system()} {platform.machine()}",
        versions=versions,
        devices=devices,
        backends=backends,
    )


def format_table(env: Environment) -> str:
    rows = [("python", env.python), ("platform", env.platform)]
    rows += [(k, v or "not installed") for k, v in env.versions.items()]
    lines = [f"{k:<22} {v}" for k, v in rows]
    lines.append("")
    if env.devices:
        lines.append(f"{'#':<3}{'CUDA device':<28}{'cc':<6}{'memory':>10}{'SMs':>6}{'L2':>10}")
        for d in env.devices:
            l2 = "?" if d.l2_mib is None else f"{d.l2_mib:g} MiB"
            lines.append(
                f"{d.index:<3}{d.name:<28}{d.compute_capability:<6}{d.memory_gib:>6.1f} GiB{d.sm_count:>6}{l2:>10}"
            )
    else:
        lines.append("CUDA devices           none")
    lines.append("")
    lines.append(f"{'backend':<22} {'runs here':<10} why")
    for name, (ok, why) in env.backends.items():
        lines.append(f"{name:<22} {'yes' if ok else 'no':<10} {why}")
    return "\n".join(lines)
