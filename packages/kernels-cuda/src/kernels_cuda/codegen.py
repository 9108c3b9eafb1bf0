"""The codegen core: CUDA C in this package -> NVRTC -> cubin -> a CuPy kernel on the caller's stream.

Every CUDA kernel of kernels_cuda goes through here. A `Spec` names one specialization: a .cu
file under `kernels_cuda/cuda/`, its entry point, the element dtype and the compile-time
constants the file reads (block size, vector width, rows per block, cluster size, ...), which
become `-DKL_<NAME>=<value>` options. `compile_spec(spec, arch)` runs NVRTC for one real
architecture (`sm_90` on Hopper) and returns a cubin plus the resource report ptxas prints with
`-Xptxas=-v` (registers, shared memory, stack, spill stores/loads). Cubins are cached in memory
and on disk, keyed by a hash of the sources, the options, the architecture and the NVRTC
version; the cache folder is $KERNELS_CUDA_CACHE_DIR, else ~/.cache/kernels-cuda.
`launch(spec, grid, block, args, stream=...)` loads the cubin with `cupy.RawModule(path=...)`
for the current device and launches on the given stream.

The sources are self-contained (common.cuh is handed to NVRTC as an in-memory header), because
NVRTC on the GPU machine has no CUDA include path.

Offline, with no GPU, compile every specialization the kernels can ask for and print the table:

    python -m kernels_cuda.codegen --offline --arch sm_80 sm_90
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

SOURCE_DIR = Path(__file__).parent / "cuda"
CACHE_ENV = "KERNELS_CUDA_CACHE_DIR"
OPTIONS = ("-std=c++17", "-lineinfo", "-Xptxas=-v")
DTYPE_CODES = {"float32": "KL_F32", "float16": "KL_F16", "bfloat16": "KL_BF16"}
DTYPE_SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
# CUfunction_attribute values CuPy does not name (cuda.h).
_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14
_PORTABLE_CLUSTER = 8
# Modules whose `specializations()` list every Spec they can launch (for --offline).
KERNEL_MODULES = ("kernels_cuda.vecadd", "kernels_cuda.softmax_variants", "kernels_cuda.softmax_backward")


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
        defines = [f"-DKL_DTYPE={DTYPE_CODES[self.dtype]}"] + [f"-DKL_{k}={v}" for k, v in self.constants]
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
    resources: Resources
    log: str
    seconds: float  # NVRTC time; 0.0 when it came from the disk cache
    from_cache: bool


class CompileError(RuntimeError):
    pass


def arch_cc(arch: str) -> int:
    """'sm_90' -> 90."""
    m = re.fullmatch(r"sm_(\d+)a?", arch)
    if not m:
        raise ValueError(f"not a real GPU architecture: {arch!r} (expected e.g. 'sm_90')")
    return int(m.group(1))


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "kernels-cuda")


@cache
def _nvrtc():
    from cupy_backends.cuda.libs import nvrtc

    return nvrtc


def nvrtc_version() -> tuple[int, int]:
    return tuple(_nvrtc().getVersion())


@cache
def _headers() -> tuple[tuple[str, str], ...]:
    return tuple((p.name, p.read_text()) for p in sorted(SOURCE_DIR.glob("*.cuh")))


def _source(spec: Spec) -> str:
    path = SOURCE_DIR / spec.source
    if not path.is_file():
        raise FileNotFoundError(f"no CUDA source {spec.source!r} in {SOURCE_DIR}")
    return path.read_text()


def cache_key(spec: Spec, arch: str) -> str:
    h = hashlib.sha256()
    for part in (
        _source(spec),
        *(f"{name}\0{text}" for name, text in _headers()),
        spec.kernel,
        *spec.options(arch),
        "nvrtc {}.{}".format(*nvrtc_version()),
    ):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


_RES_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)' for '(?P<arch>sm_\w+)'")
_RES_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_RES_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:.*?, (\d+) bytes smem)?")


def parse_resources(log: str, kernel: str) -> Resources:
    """Read one entry point's report out of ptxas' -v output (as NVRTC's log carries it)."""
    lines = log.splitlines()
    start = next(
        (i for i, ln in enumerate(lines) if (m := _RES_ENTRY.search(ln)) and m["name"] == kernel), None
    )
    if start is None:
        raise ValueError(f"no ptxas report for entry {kernel!r} in the log:\n{log}")
    stack = used = None
    for ln in lines[start + 1 :]:
        if _RES_ENTRY.search(ln):
            break
        stack = stack or _RES_STACK.search(ln)
        used = used or _RES_USED.search(ln)
    if stack is None or used is None:
        raise ValueError(f"incomplete ptxas report for {kernel!r}:\n{log}")
    return Resources(
        registers=int(used[1]),
        barriers=int(used[2] or 0),
        shared_bytes=int(used[3] or 0),
        stack_bytes=int(stack[1]),
        spill_store_bytes=int(stack[2]),
        spill_load_bytes=int(stack[3]),
    )


_compiled: dict[str, Compiled] = {}
_compile_lock = threading.Lock()


def compile_spec(spec: Spec, arch: str) -> Compiled:
    """The cubin of `spec` for `arch`, from memory, from disk, or from NVRTC (in that order)."""
    if not spec.supports_arch(arch):
        raise ValueError(f"{spec.name} needs sm_{spec.min_cc} or newer, not {arch}")
    key = cache_key(spec, arch)
    if key in _compiled:
        return _compiled[key]
    folder = cache_dir()
    cubin_path, ptx_path, meta_path = (folder / f"{key}.{ext}" for ext in ("cubin", "ptx", "json"))
    if all(p.is_file() for p in (cubin_path, ptx_path, meta_path)):
        meta = json.loads(meta_path.read_text())
        result = Compiled(
            spec, arch, cubin_path, ptx_path, Resources(**meta["resources"]), meta["log"], 0.0, True
        )
    else:
        cubin, ptx, log, seconds = _nvrtc_compile(spec, arch)
        resources = parse_resources(log, spec.kernel)
        folder.mkdir(parents=True, exist_ok=True)
        _write_atomic(cubin_path, cubin)
        _write_atomic(ptx_path, ptx)
        meta = {
            "spec": spec.name,
            "arch": arch,
            "nvrtc": list(nvrtc_version()),
            "resources": asdict(resources),
            "log": log,
        }
        _write_atomic(
            meta_path, json.dumps(meta, indent=1).encode()
        )  # last: its presence marks a complete entry
        result = Compiled(spec, arch, cubin_path, ptx_path, resources, log, seconds, False)
    with _compile_lock:
        return _compiled.setdefault(key, result)


def _nvrtc_compile(spec: Spec, arch: str) -> tuple[bytes, bytes, str, float]:
    nvrtc = _nvrtc()
    names = [name.encode() for name, _ in _headers()]
    texts = [text.encode() for _, text in _headers()]
    t0 = time.perf_counter()
    prog = nvrtc.createProgram(_source(spec), spec.source, texts, names)
    try:
        try:
            nvrtc.compileProgram(prog, spec.options(arch))
        except nvrtc.NVRTCError as exc:
            raise CompileError(
                f"NVRTC failed on {spec.name} for {arch}: {exc}\n{nvrtc.getProgramLog(prog)}"
            ) from None
        return nvrtc.getCUBIN(prog), nvrtc.getPTX(prog), nvrtc.getProgramLog(prog), time.perf_counter() - t0
    finally:
        nvrtc.destroyProgram(prog)


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


# --- loading and launching (needs a GPU) ----------------------------------------------------


@cache
def device_arch(device_id: int) -> str:
    import cupy

    return f"sm_{cupy.cuda.Device(device_id).compute_capability}"


_kernels: dict[tuple[Spec, int], object] = {}


def kernel(spec: Spec, device_id: int | None = None):
    """The loaded `cupy.RawKernel` of `spec` on a device (default: CuPy's current one)."""
    import cupy

    device_id = cupy.cuda.Device().id if device_id is None else device_id
    fn = _kernels.get((spec, device_id))
    if fn is None:
        compiled = compile_spec(spec, device_arch(device_id))
        with cupy.cuda.Device(device_id):
            fn = cupy.RawModule(path=str(compiled.cubin_path)).get_function(spec.kernel)
            if spec.cluster > _PORTABLE_CLUSTER:
                from cupy_backends.cuda.api import driver

                driver.funcSetAttribute(fn.kernel.ptr, _NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
        _kernels[(spec, device_id)] = fn
    return fn


def launch(
    spec: Spec,
    grid: tuple[int, ...],
    block: tuple[int, ...],
    args: tuple,
    *,
    stream,
    device_id: int,
    shared_mem: int = 0,
) -> None:
    """Launch `spec` on `stream` (a cupy Stream or ExternalStream) of `device_id`.

    Dynamic shared memory over the default 48 KB is allowed by raising the kernel's
    max_dynamic_shared_size_bytes first (up to the device's opt-in limit)."""
    import cupy

    fn = kernel(spec, device_id)
    with cupy.cuda.Device(device_id), stream:
        if shared_mem > 48 * 1024 and fn.max_dynamic_shared_size_bytes < shared_mem:
            fn.max_dynamic_shared_size_bytes = shared_mem
        fn(grid, block, args, shared_mem=shared_mem)


# --- every specialization, offline ----------------------------------------------------------


def all_specs() -> list[Spec]:
    """Every Spec the kernel modules can launch, in a stable order."""
    import importlib

    specs: list[Spec] = []
    for module in KERNEL_MODULES:
        specs.extend(importlib.import_module(module).specializations())
    return list(dict.fromkeys(specs))


def compile_all(archs, specs=None, jobs: int | None = None) -> list[Compiled]:
    """Compile every (spec, arch) pair the spec supports; NVRTC releases the GIL, so threads help."""
    pairs = [(s, a) for a in archs for s in (all_specs() if specs is None else specs) if s.supports_arch(a)]
    with ThreadPoolExecutor(jobs or os.cpu_count() or 1) as pool:
        return list(pool.map(lambda p: compile_spec(*p), pairs))


def format_table(results: list[Compiled]) -> str:
    rows = [("specialization", "arch", "regs", "smem B", "stack B", "spill st B", "spill ld B", "nvrtc s")]
    for r in results:
        res = r.resources
        rows.append(
            (
                r.spec.name,
                r.arch,
                str(res.registers),
                str(res.shared_bytes),
                str(res.stack_bytes),
                str(res.spill_store_bytes),
                str(res.spill_load_bytes),
                "cached" if r.from_cache else f"{r.seconds:.2f}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernels_cuda.codegen", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--offline",
        action="store_true",
        help="compile for --arch without touching a GPU (default: the current device's arch)",
    )
    parser.add_argument("--arch", nargs="+", default=None, help="real architectures, e.g. sm_80 sm_90")
    parser.add_argument("--jobs", type=int, default=None, help="parallel NVRTC compiles (default: CPU count)")
    args = parser.parse_args(argv)
    if args.arch is None:
        if args.offline:
            parser.error("--offline needs --arch (e.g. --arch sm_80 sm_90)")
        import cupy

        args.arch = [device_arch(cupy.cuda.Device().id)]
    for arch in args.arch:
        arch_cc(arch)
    t0 = time.perf_counter()
    try:
        results = compile_all(args.arch, jobs=args.jobs)
    except CompileError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(format_table(results))
    spilled = [r for r in results if r.resources.spill_bytes]
    print(
        f"\n{len(results)} specializations for {' '.join(args.arch)} with NVRTC %d.%d in "
        f"{time.perf_counter() - t0:.1f} s; {len(spilled)} spill; cache: {cache_dir()}" % nvrtc_version()
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
