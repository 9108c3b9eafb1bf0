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


def format_table(env: Environment, style: str = "auto") -> str:
    """Versions, CUDA devices and backends as three tables (labtools.tables)."""
    from labtools.tables import key_values, render

    pairs = [("python", env.python), ("platform", env.platform)]
    pairs += [(k, v or "not installed") for k, v in env.versions.items()]
    parts = [key_values(pairs, style=style)]
    if env.devices:
        rows = [
            (
                d.index,
                d.name,
                d.compute_capability,
                f"{d.memory_gib:.1f} GiB",
                d.sm_count,
                "?" if d.l2_mib is None else f"{d.l2_mib:g} MiB",
            )
            for d in env.devices
        ]
        parts.append(
            render(("#", "CUDA device", "cc", "memory", "SMs", "L2"), rows, style=style, align="rllrrr")
        )
    else:
        parts.append(key_values([("CUDA devices", "none")], style=style))
    rows = [(name, "yes" if ok else "no", why) for name, (ok, why) in env.backends.items()]
    parts.append(render(("backend", "runs here", "why"), rows, style=style))
    return "\n\n".join(parts)
