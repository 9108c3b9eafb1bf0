"""What the codegen works with: a `Spec` (one specialization to compile), ptxas' `Resources`
report of it, and the `Compiled` cubin of it for one architecture."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

OPTIONS = ("-std=c++17", "-lineinfo", "-Xptxas=-v")
DTYPE_CODES = {"float32": "KL_F32", "float16": "KL_F16", "bfloat16": "KL_BF16", "float64": "KL_F64"}
DTYPE_SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64"}


@dataclass(frozen=True)
class Spec:
    """One specialization: a source file compiled with one dtype and one set of constants.

    `constants` are (NAME, int) pairs, passed as -DKL_NAME=value. A constant named CLUSTER is the
    cluster size the source compiles in with __cluster_dims__: such kernels need sm_90, and a
    size over 8 gets the non-portable-cluster attribute at load.
    """

    source: str  # file name under kernels_cuda/cuda/, e.g. "03_softmax_fused.cu"
    kernel: str  # its extern "C" entry point
    dtype: str  # "float32" | "float16" | "bfloat16"
    constants: tuple[tuple[str, int], ...] = ()

    @property
    def name(self) -> str:
        consts = ",".join(f"{k}={v}" for k, v in self.constants)
        return f"{self.kernel}.{DTYPE_SHORT[self.dtype]}" + (f"[{consts}]" if consts else "")

    @property
    def cluster(self) -> int:
        return dict(self.constants).get("CLUSTER", 0)

    @property
    def min_cc(self) -> int:
        return 90 if self.cluster else 80

    def options(self, arch: str) -> list[str]:
        # KL_ENTRY_<kernel>: a source of several entry points may compile only the one asked for
        defines = [f"-DKL_DTYPE={DTYPE_CODES[self.dtype]}", f"-DKL_ENTRY_{self.kernel}"]
        defines += [f"-DKL_{k}={v}" for k, v in self.constants]
        return [f"-arch={arch}", *OPTIONS, *defines]

    def supports_arch(self, arch: str) -> bool:
        return arch_cc(arch) >= self.min_cc


@dataclass(frozen=True)
class Resources:
    """ptxas' report for one entry point (bytes, except registers and barriers)."""

    registers: int
    shared_bytes: int  # static shared memory; dynamic shared memory is chosen at launch
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int
    barriers: int

    @property
    def spill_bytes(self) -> int:
        return self.spill_store_bytes + self.spill_load_bytes


@dataclass(frozen=True)
class Compiled:
    spec: Spec
    arch: str
    cubin_path: Path
    ptx_path: Path  # kept beside the cubin: the first place to check access widths and local memory
    resources: Resources | None  # None where NVRTC's log carried no ptxas report (see compiler._write_entry)
    log: str
    seconds: float  # NVRTC time; 0.0 when it came from the disk cache
    from_cache: bool
    cubin: bytes = field(default=b"", repr=False)  # the verified bytes the kernel is loaded from


def arch_cc(arch: str) -> int:
    """'sm_90' -> 90."""
    m = re.fullmatch(r"sm_(\d+)a?", arch)
    if not m:
        raise ValueError(f"not a real GPU architecture: {arch!r} (expected e.g. 'sm_90')")
    return int(m.group(1))
