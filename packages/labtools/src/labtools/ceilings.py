"""The two ceilings every number is read against: memory bandwidth and matrix throughput.

Measured once per sweep on the device in hand (`measure("cuda")`: torch's device copy
and matmul; `measure("cpu")`: NumPy's, for CPU-only runs), with the datasheet figures
below as the fallback and as the dashed reference lines of the roofline plot.
Datasheet numbers are dense (no structured sparsity) peak rates at boost clock.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass

import numpy as np

from labtools.bench import time_cpu, time_cuda


@dataclass(frozen=True)
class GpuSpec:
    name: str
    hbm_gbps: float  # datasheet memory bandwidth, GB/s
    fp32_tflops: float  # CUDA cores
    tf32_tflops: float  # tensor cores, dense
    bf16_tflops: float  # tensor cores, dense, fp32 accumulate
    source: str


DATASHEETS: dict[str, GpuSpec] = {
    s.name: s
    for s in (
        GpuSpec(
            "H100 SXM",
            3350,
            67,
            494.7,
            989.4,
            "NVIDIA H100 Tensor Core GPU datasheet (2023), SXM5 80GB column",
        ),
        GpuSpec(
            "H100 PCIe", 2000, 51, 378, 756, "NVIDIA H100 Tensor Core GPU datasheet (2023), PCIe 80GB column"
        ),
        GpuSpec(
            "H200",
            4800,
            67,
            494.7,
            989.4,
            "NVIDIA H200 Tensor Core GPU product brief (2024), SXM 141GB column",
        ),
        GpuSpec(
            "A100", 2039, 19.5, 156, 312, "NVIDIA A100 Tensor Core GPU datasheet (2021), SXM4 80GB column"
        ),
        GpuSpec("L4", 300, 30.3, 60, 121, "NVIDIA L4 Tensor Core GPU datasheet (2023)"),
        GpuSpec(
            "RTX 4090",
            1008,
            82.6,
            82.6,
            165.2,
            "NVIDIA Ada Lovelace GPU architecture whitepaper v1.01, RTX 4090 column",
        ),
    )
}


def datasheet_for(device_name: str) -> GpuSpec | None:
    """Match a CUDA device name ("NVIDIA H100 80GB HBM3", "NVIDIA H200") to its row."""
    n = device_name.upper()
    if "H200" in n:
        return DATASHEETS["H200"]
    if "H100" in n:
        return DATASHEETS["H100 PCIe" if "PCIE" in n else "H100 SXM"]
    if "A100" in n:
        return DATASHEETS["A100"]
    if "4090" in n:
        return DATASHEETS["RTX 4090"]
    if n.replace("NVIDIA", "").strip() == "L4":
        return DATASHEETS["L4"]
    return None


@dataclass(frozen=True)
class Ceilings:
    device: str
    copy_gbps: float  # measured: (bytes read + written) / time of a large device copy
    matmul_tflops: dict[str, float]  # measured: dtype mode -> TFLOP/s
    datasheet: GpuSpec | None

    def to_dict(self) -> dict:
        return {
            "device": self.device,
            "copy_gbps": self.copy_gbps,
            "matmul_tflops": dict(self.matmul_tflops),
            "datasheet": None if self.datasheet is None else dict(self.datasheet.__dict__),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Ceilings:
        sheet = d.get("datasheet")
        return cls(
            d["device"],
            d["copy_gbps"],
            dict(d.get("matmul_tflops") or {}),
            None if sheet is None else GpuSpec(**sheet),
        )


def measure_copy(nbytes: int = 2**30, dtype: str = "float32") -> float:
    """GB/s of torch's vectorized device-to-device copy of `nbytes`, counting the bytes
    read and the bytes written."""
    import torch

    n = nbytes // torch.empty((), dtype=getattr(torch, dtype)).element_size()
    src = torch.randn(n, device="cuda").to(getattr(torch, dtype))
    dst = torch.empty_like(src)
    t = time_cuda(dst.copy_, [(src,)], flush_bytes=0)  # 1 GiB: far past any L2
    return 2 * src.numel() * src.element_size() / (t.median_us * 1e-6) / 1e9


def measure_matmul(n: int = 8192) -> dict[str, float]:
    """TFLOP/s of an n x n x n product in fp32 (CUDA cores), tf32 and bf16 (tensor cores),
    on random data (zeros run faster and would flatter the ceiling)."""
    import torch

    out = {}
    a32, b32 = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    for mode in ("fp32", "tf32", "bf16"):
        a, b = (a32.bfloat16(), b32.bfloat16()) if mode == "bf16" else (a32, b32)
        prev = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
        try:
            t = time_cuda(torch.mm, [(a, b)], flush_bytes=0, min_reps=10, time_cap_s=2.0)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = prev
        out[mode] = 2 * n**3 / (t.median_us * 1e-6) / 1e12
    return out


def measure_copy_cpu(nbytes: int = 2**28) -> float:
    """GB/s (read + write) of NumPy copying `nbytes` of float32 on the host: the roof for
    CPU-only runs, far past any CPU cache."""
    src = np.ones(nbytes // 4, dtype=np.float32)  # the values do not change a copy's speed
    dst = np.empty_like(src)
    t = time_cpu(np.copyto, [(dst, src)], min_reps=5, time_cap_s=1.0)
    return 2 * src.nbytes / (t.median_us * 1e-6) / 1e9


def measure_matmul_cpu(n: int = 1024) -> dict[str, float]:
    """TFLOP/s of NumPy's (BLAS) fp32 n x n x n product on random data."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    t = time_cpu(np.matmul, [(a, b)], min_reps=5, time_cap_s=1.0)
    return {"fp32": 2 * n**3 / (t.median_us * 1e-6) / 1e12}


def measure(device: str = "cuda", matmul: bool = True) -> Ceilings:
    """Measure the copy (and, with `matmul`, the matmul) ceiling of `device`."""
    if device == "cpu":
        name = f"cpu: {platform.processor() or platform.machine()}, {os.cpu_count()} logical cores"
        return Ceilings(name, measure_copy_cpu(), measure_matmul_cpu() if matmul else {}, None)
    import torch

    name = torch.cuda.get_device_name()
    return Ceilings(
        device=name,
        copy_gbps=measure_copy(),
        matmul_tflops=measure_matmul() if matmul else {},
        datasheet=datasheet_for(name),
    )
