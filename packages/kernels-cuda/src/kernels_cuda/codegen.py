"""The codegen core: CUDA C in this package -> NVRTC -> cubin -> a kernel launched on the caller's stream.

Every CUDA kernel of kernels_cuda goes through here. A `Spec` names one specialization: a .cu
file under `kernels_cuda/cuda/`, its entry point, the element dtype and the compile-time
constants the file reads (block size, vector width, rows per block, cluster size, ...), which
become `-DKL_<NAME>=<value>` options. `compile_spec(spec, arch)` runs NVRTC (through CuPy's
binding) for one real architecture (`sm_90` on Hopper) and returns a cubin plus the resource
report ptxas prints with `-Xptxas=-v` (registers, shared memory, stack, spill stores/loads).

Cubins are cached in memory and on disk ($KERNELS_CUDA_CACHE_DIR, else ~/.cache/kernels-cuda),
keyed by a hash of the sources, the options, the architecture and the NVRTC version. The disk
cache (_diskcache.py) verifies what it serves; an entry that fails verification is discarded
with one warning line (CacheWarning) and rebuilt.

`kernel(spec, device_id)` loads the cubin through the driver (`_driver.Function`);
`packed(spec, device_id, grid, block, shared_mem, types, values)` packs a launch once for a
caller that launches it many times; `launch(...)` packs and launches in one call.

Kernel modules register the specializations they can launch with `register_specializations`;
`all_specs()` imports the modules the package lists (`kernels_cuda.KERNEL_MODULES`) and collects
them. Offline, with no GPU, compile them all and print the table:

    python -m kernels_cuda.codegen --offline --arch sm_80 sm_90

The sources are self-contained (common.cuh is handed to NVRTC as an in-memory header), because
NVRTC on a machine with only the driver has no CUDA include path.

The disk cache, the driver calls and the offline command are in _diskcache.py, _driver.py and
offline.py.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields
from functools import cache
from pathlib import Path

from kernels_cuda import _diskcache

SOURCE_DIR = Path(__file__).parent / "cuda"
CACHE_ENV = "KERNELS_CUDA_CACHE_DIR"
OPTIONS = ("-std=c++17", "-lineinfo", "-Xptxas=-v")
DTYPE_CODES = {"float32": "KL_F32", "float16": "KL_F16", "bfloat16": "KL_BF16", "float64": "KL_F64"}
DTYPE_SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64"}
_PORTABLE_CLUSTER = 8
INSTALL_HINT = (
    "kernels_cuda compiles its kernels with NVRTC through CuPy, which is not installed: "
    "pip install 'kernel-lab-kernels-cuda[cuda13]' (or '[cuda12]' for a CUDA 12 driver)"
)


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
    resources: Resources | None  # None where NVRTC's log carried no ptxas report (see _write_entry)
    log: str
    seconds: float  # NVRTC time; 0.0 when it came from the disk cache
    from_cache: bool
    cubin: bytes = field(default=b"", repr=False)  # the verified bytes the kernel is loaded from


class CompileError(RuntimeError):
    pass


class CacheWarning(UserWarning):
    """A disk-cache entry failed verification and is rebuilt."""


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
    try:
        from cupy_backends.cuda.libs import nvrtc
    except ImportError:
        raise ImportError(INSTALL_HINT) from None
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


# --- compiling, through the verified disk cache (_diskcache) ----------------------------------


def _read_entry(folder: Path, key: str, spec: Spec, arch: str) -> Compiled | None:
    """The cached compile of `key`, None if there is none; _diskcache.BadEntry if it is unusable."""
    entry = _diskcache.read(folder, key)
    if entry is None:
        return None
    try:
        resources, log = entry.fields["resources"], entry.fields["log"]
        if resources is not None:
            if set(resources) != {f.name for f in fields(Resources)} or not all(
                type(v) is int and v >= 0 for v in resources.values()
            ):
                raise _diskcache.BadEntry("malformed resource report")
            resources = Resources(**resources)
    except (KeyError, TypeError, AttributeError) as exc:
        raise _diskcache.BadEntry(f"incomplete fields ({type(exc).__name__})") from None
    return Compiled(spec, arch, entry.cubin_path, entry.ptx_path, resources, log, 0.0, True, entry.cubin)


def _write_entry(folder: Path, key: str, spec: Spec, arch: str, cubin: bytes, ptx: bytes, log: str, seconds):
    try:
        resources = parse_resources(log, spec.kernel)
    except ValueError:
        # Some NVRTC runs leave ptxas' -v report out of the program log; the cubin is as good,
        # only the table lacks its row.
        resources = None
    fields_ = {
        "spec": spec.name,
        "arch": arch,
        "nvrtc": list(nvrtc_version()),
        "resources": None if resources is None else asdict(resources),
        "log": log,
    }
    entry = _diskcache.write(folder, key, cubin, ptx, fields_)
    return Compiled(spec, arch, entry.cubin_path, entry.ptx_path, resources, log, seconds, False, cubin)


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
    try:
        result = _read_entry(folder, key, spec, arch)
    except _diskcache.BadEntry as exc:
        warnings.warn(
            f"kernels_cuda: discarding cache entry {folder / key}.json for {spec.name} ({exc}); rebuilding",
            CacheWarning,
            stacklevel=2,
        )
        result = None
    if result is None:
        cubin, ptx, log, seconds = _nvrtc_compile(spec, arch)
        result = _write_entry(folder, key, spec, arch, cubin, ptx, log, seconds)
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


# --- loading and launching (needs a GPU) ----------------------------------------------------


@cache
def device_arch(device_id: int) -> str:
    from kernels_cuda import _driver

    major = _driver.device_attribute(device_id, _driver.DEV_COMPUTE_CAPABILITY_MAJOR)
    minor = _driver.device_attribute(device_id, _driver.DEV_COMPUTE_CAPABILITY_MINOR)
    return f"sm_{major}{minor}"


_kernels: dict[tuple[Spec, int], object] = {}
_kernel_lock = threading.Lock()


def kernel(spec: Spec, device_id: int):
    """The loaded `_driver.Function` of `spec` on a device (compiled for the device's arch)."""
    fn = _kernels.get((spec, device_id))
    if fn is None:
        from kernels_cuda import _driver

        compiled = compile_spec(spec, device_arch(device_id))
        with _kernel_lock:
            fn = _kernels.get((spec, device_id))
            if fn is None:
                fn = _driver.Function(compiled.cubin, spec.kernel, device_id)
                if spec.cluster > _PORTABLE_CLUSTER:
                    fn.set_attribute(_driver.FUNC_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
                _kernels[(spec, device_id)] = fn
    return fn


def packed(spec: Spec, device_id: int, grid, block, shared_mem: int, types, values):
    """A `_driver.PackedLaunch` of `spec`: call it with (stream handle, *leading pointers)."""
    from kernels_cuda import _driver

    return _driver.PackedLaunch(kernel(spec, device_id), grid, block, shared_mem, types, values)


_CTYPES = {
    "uint64": ctypes.c_uint64,
    "int64": ctypes.c_int64,
    "int32": ctypes.c_int32,
    "uint32": ctypes.c_uint32,
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}


def stream_handle(stream) -> int:
    """A CUstream handle from an int or anything with `.ptr` (CuPy) or `.cuda_stream` (torch)."""
    if isinstance(stream, int):
        return stream
    for attr in ("ptr", "cuda_stream"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise TypeError(f"not a CUDA stream: {stream!r}")


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
    """Launch `spec` once on `stream` (a CUstream handle, or a CuPy / torch stream) of `device_id`.

    `args` are NumPy scalars (np.uint64 for pointers, np.int64, np.int32, ...), whose types say
    how each is passed. A caller that launches the same thing often packs it once with `packed`.
    """
    types = [_CTYPES[type(a).__name__] for a in args]
    packed(spec, device_id, grid, block, shared_mem, types, [a.item() for a in args])(stream_handle(stream))


# --- every specialization, offline ----------------------------------------------------------

_providers: dict[str, Callable[[], Iterable[Spec]]] = {}


def register_specializations(provider: Callable[[], Iterable[Spec]]) -> Callable[[], Iterable[Spec]]:
    """Register a kernel module's function that lists every Spec it can launch (for the offline
    compile); usable as a decorator. Registering the same function again replaces it."""
    _providers[f"{provider.__module__}.{provider.__qualname__}"] = provider
    return provider


def all_specs() -> list[Spec]:
    """Every Spec the kernel modules can launch, in a stable order."""
    import kernels_cuda

    kernels_cuda.import_kernel_modules()
    specs: list[Spec] = []
    for name in sorted(_providers):
        specs.extend(_providers[name]())
    return list(dict.fromkeys(specs))


def __getattr__(name: str):
    """The offline command (compile every specialization, print the table) lives in offline.py;
    its functions are offered here too, where they have always been found. Looked up on first
    use: offline imports this module, so importing it here would be circular."""
    if name in ("compile_all", "format_table", "main"):
        from kernels_cuda import offline

        return getattr(offline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    # Run the imported module's main: kernel modules register with `kernels_cuda.codegen`, which
    # is a different module object from this `__main__`.
    from kernels_cuda.offline import main as _main

    sys.exit(_main())
