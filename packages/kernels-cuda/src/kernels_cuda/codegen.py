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

This module loads and launches, and offers every name above, where kernel modules find them.
The types are in codegen_types.py, compiling in compiler.py, the registry in registry.py; the
disk cache, the driver calls and the offline command in _diskcache.py, _driver.py and offline.py.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from functools import cache

# The pipeline's names, re-exported: kernel modules, offline.py and the tests reach them here.
from kernels_cuda.codegen_types import (  # noqa: F401
    Compiled,
    Spec,
    arch_cc,
)
from kernels_cuda.compiler import (  # noqa: F401
    CACHE_ENV,
    SOURCE_DIR,
    CacheWarning,
    CompileError,
    cache_dir,
    cache_key,
    compile_spec,
    nvrtc_version,
    parse_resources,
)
from kernels_cuda.registry import all_specs, register_specializations  # noqa: F401

_PORTABLE_CLUSTER = 8  # a cluster of more blocks needs the non-portable-size attribute


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


def __getattr__(name: str):
    """The offline command (compile every specialization, print the table) lives in offline.py;
    its functions are offered here too, where they have always been found. Looked up on first
    use: offline imports this module, so importing it here would be circular."""
    if name in ("compile_all", "format_table", "main"):
        from kernels_cuda import offline

        return getattr(offline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    # Run offline's main, which reaches the pipeline through the imported `kernels_cuda.codegen`:
    # this `__main__` is a second module object beside it.
    from kernels_cuda.offline import main as _main

    sys.exit(_main())
