"""The CUDA driver API through ctypes: load a cubin, read device attributes, launch a kernel.

Kernels are launched with `cuLaunchKernel` on arguments packed once: a `PackedLaunch` keeps the
grid, block, dynamic shared memory and every argument in ctypes slots, and a call rewrites only
the slots that change (the data pointers, and for `rows` the row count and grid) before the one
driver call. That call goes through a ctypes function without argtypes: the grid, block and
shared bytes are small ints, and each pointer is an argument object made once (`_pointer`), so
ctypes converts and allocates nothing per call. Timed on a stand-in driver that returns at once,
it costs no more than cuda-python's compiled `cuLaunchKernel`, and less than the same ctypes call
with argtypes.

Why not cuda-python's binding: its first call resolves every driver entry point it knows through
`cuGetProcAddress_v2`, each at the CUDA version that introduced it, and a driver older than the
binding answers CUDA_ERROR_INVALID_VALUE for the newer ones (as cuGetProcAddress documents for a
version above the driver's). Harmless, but compute-sanitizer reports each as an API error in the
user's program. Here ctypes resolves the few functions below by dlsym.

Modules are loaded into the device's primary context, the one torch and CuPy use. With one
device that context is current on any thread that has touched CUDA; a thread that has not gets
it made current on the first CUDA_ERROR_INVALID_CONTEXT. With several devices every launch pushes
the device's context and pops it after, since the caller's current device need not be the data's:
the tensor's device decides where a kernel runs, and the caller's current context is as it was.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from functools import cache

CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_CONTEXT = 201
# CUfunction_attribute and CUdevice_attribute values (cuda.h)
FUNC_SHARED_SIZE_BYTES = 1
FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
FUNC_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14
DEV_COMPUTE_CAPABILITY_MAJOR = 75
DEV_COMPUTE_CAPABILITY_MINOR = 76
DEV_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
DEV_MULTIPROCESSOR_COUNT = 16
DEFAULT_SHARED_PER_BLOCK = 48 * 1024  # static and dynamic together, before a kernel opts in to more

_p = ctypes.c_void_p
_u = ctypes.c_uint
_i = ctypes.c_int


class CudaError(RuntimeError):
    def __init__(self, what: str, code: int):
        self.error = error_name(code)  # the CUresult's name, e.g. CUDA_ERROR_INVALID_CLUSTER_SIZE
        super().__init__(f"{what} failed: {self.error} ({code})")
        self.code = code


@cache
def _lib():
    name = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        raise RuntimeError(
            f"kernels_cuda: no CUDA driver here ({name} not found); it needs an NVIDIA GPU"
        ) from None
    signatures = {
        "cuInit": (_u,),
        "cuGetErrorName": (_i, ctypes.POINTER(ctypes.c_char_p)),
        "cuDeviceGet": (ctypes.POINTER(_i), _i),
        "cuDeviceGetCount": (ctypes.POINTER(_i),),
        "cuDeviceGetAttribute": (ctypes.POINTER(_i), _i, _i),
        "cuDevicePrimaryCtxRetain": (ctypes.POINTER(_p), _i),
        "cuCtxPushCurrent_v2": (_p,),
        "cuCtxPopCurrent_v2": (ctypes.POINTER(_p),),
        "cuCtxSetCurrent": (_p,),
        "cuModuleLoadData": (ctypes.POINTER(_p), ctypes.c_char_p),
        "cuModuleGetFunction": (ctypes.POINTER(_p), _p, ctypes.c_char_p),
        "cuFuncSetAttribute": (_p, _i, _i),
        "cuFuncGetAttribute": (ctypes.POINTER(_i), _i, _p),
    }
    for fn, argtypes in signatures.items():
        getattr(lib, fn).argtypes = argtypes
        getattr(lib, fn).restype = _i
    check(lib.cuInit(0), "cuInit")
    return lib


def _pointer(address: int):
    """An argument that passes `address` as a pointer to a function without argtypes (where a
    plain int would go as a 32-bit C int): byref of a c_char placed at that address, which is
    never read. ctypes passes a byref object's address as it is, where a c_void_p would first be
    converted into such an object on every call."""
    return ctypes.byref(ctypes.c_char.from_address(address))


_streams: dict = {}  # CUstream handle -> its _pointer, made once per handle
MAX_CACHED_STREAMS = 256


def _stream(handle: int):
    stream = _streams.get(handle)
    if stream is None:
        if len(_streams) >= MAX_CACHED_STREAMS:
            _streams.clear()
        stream = _streams[handle] = _pointer(handle)
    return stream


@cache
def _launch_kernel():
    """cuLaunchKernel without argtypes (a function object of its own: `_lib().cuLaunchKernel` is
    shared). Callers pass the function, stream and argument array as pointers (`_pointer`,
    byref), the grid, block and shared bytes as Python ints (C ints: each is below 2**31, and the
    driver reads 32 bits), and None for `extra`; the result is the CUresult (restype c_int)."""
    return _lib()["cuLaunchKernel"]


def error_name(code: int) -> str:
    name = ctypes.c_char_p()
    if _lib().cuGetErrorName(code, ctypes.byref(name)) != CUDA_SUCCESS or not name.value:
        return "CUDA_ERROR_UNKNOWN"
    return name.value.decode()


def check(code: int, what: str) -> None:
    if code != CUDA_SUCCESS:
        raise CudaError(what, code)


@cache
def device_count() -> int:
    n = _i()
    check(_lib().cuDeviceGetCount(ctypes.byref(n)), "cuDeviceGetCount")
    return n.value


@cache
def _device(device_id: int) -> int:
    dev = _i()
    check(_lib().cuDeviceGet(ctypes.byref(dev), device_id), f"cuDeviceGet({device_id})")
    return dev.value


def device_attribute(device_id: int, attribute: int) -> int:
    value = _i()
    check(
        _lib().cuDeviceGetAttribute(ctypes.byref(value), attribute, _device(device_id)),
        "cuDeviceGetAttribute",
    )
    return value.value


@cache
def primary_context(device_id: int) -> int:
    """The device's primary context (retained for the life of the process)."""
    ctx = _p()
    check(_lib().cuDevicePrimaryCtxRetain(ctypes.byref(ctx), _device(device_id)), "cuDevicePrimaryCtxRetain")
    return ctx.value


class _Current:
    """`with _Current(device_id):` makes the device's primary context current, then restores."""

    __slots__ = ("ctx",)

    def __init__(self, device_id: int):
        self.ctx = primary_context(device_id)

    def __enter__(self):
        check(_lib().cuCtxPushCurrent_v2(self.ctx), "cuCtxPushCurrent")

    def __exit__(self, *exc):
        _lib().cuCtxPopCurrent_v2(ctypes.byref(_p()))


class Function:
    """One entry point of a cubin loaded on one device."""

    def __init__(self, cubin: bytes, name: str, device_id: int):
        lib = _lib()
        self.device_id = device_id
        self.name = name
        module, fn = _p(), _p()
        with _Current(device_id):
            check(lib.cuModuleLoadData(ctypes.byref(module), cubin), f"cuModuleLoadData({name})")
            check(
                lib.cuModuleGetFunction(ctypes.byref(fn), module, name.encode()),
                f"cuModuleGetFunction({name})",
            )
            static = _i()
            check(
                lib.cuFuncGetAttribute(ctypes.byref(static), FUNC_SHARED_SIZE_BYTES, fn),
                f"cuFuncGetAttribute({name})",
            )
        self.module, self.handle = module.value, fn.value
        # the dynamic shared memory a launch may ask for as things stand: the default 48 KB a block
        # counts the kernel's static shared memory too (mbarriers, inboxes), so a 48 KB chunk needs
        # the opt-in as well
        self.max_dynamic_shared = DEFAULT_SHARED_PER_BLOCK - static.value
        self._lock = threading.Lock()

    def set_attribute(self, attribute: int, value: int) -> None:
        with _Current(self.device_id):
            check(
                _lib().cuFuncSetAttribute(self.handle, attribute, value), f"cuFuncSetAttribute({self.name})"
            )

    def allow_shared(self, nbytes: int) -> None:
        """Raise the kernel's dynamic shared memory limit to `nbytes` if it is lower (past 48 KB a
        block, static shared memory included, the driver wants the kernel's opt-in first)."""
        with self._lock:
            if nbytes > self.max_dynamic_shared:
                self.set_attribute(FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)
                self.max_dynamic_shared = nbytes


def _dims(d) -> tuple[int, int, int]:
    d = (d,) if isinstance(d, int) else tuple(d)
    return (*d, *(1,) * (3 - len(d)))


class PackedLaunch:
    """One launch of `function`, its arguments packed once into ctypes slots.

    `types`/`values` are the kernel's parameters in order (ctypes types, initial values).
    `__call__(stream, *leading)` overwrites the first len(leading) arguments (the pointers) and
    launches on the CUstream handle `stream`; `two(stream, a, b)` does the same for the two leading
    64-bit pointers with as little Python as a launch can take (a closure over every constant).

    Calls are serialised by a lock. The invariant it keeps: the slots are shared by every caller of
    this launch, and from the moment a call writes its pointers into them until the driver has
    copied the arguments (inside cuLaunchKernel, which runs with the GIL released), no other call
    may write them; so the writes and the driver call happen under one lock.
    """

    __slots__ = (
        "function",
        "two",
        "_args",
        "_slots",
        "_argv",
        "_argv_pointer",
        "_lock",
        "_push",
        "_launch",
        "_fn",
    )

    def __init__(self, function: Function, grid, block, shared_mem: int, types, values):
        if shared_mem > function.max_dynamic_shared:
            function.allow_shared(shared_mem)
        self.function = function
        self._slots = [t(v) for t, v in zip(types, values, strict=True)]
        self._argv = (_p * len(self._slots))(*(ctypes.addressof(s) for s in self._slots))
        self._argv_pointer = ctypes.byref(self._argv)  # the array's address; it keeps the array alive
        self._args = (*_dims(grid), *_dims(block), shared_mem)
        self._lock = threading.Lock()
        self._push = device_count() > 1
        self._fn, self._launch = _pointer(function.handle), _launch_kernel()
        self.two = self._two_pointers()

    def _raw(self, stream: int, args: tuple | None = None) -> int:
        """One cuLaunchKernel on the packed slots (grid and block from `args`, else the packed
        ones); the driver's result code."""
        args = args or self._args
        return self._launch(self._fn, *args, _stream(stream), self._argv_pointer, None)

    def __call__(self, stream: int, *leading: int) -> None:
        self._locked(stream, leading, None, 0, None)

    def rows(self, stream: int, grid: int, m_slot: int, M: int, *leading: int) -> None:
        """The launch for M rows on `grid` blocks: argument `m_slot` (the row count) is M, the
        first len(leading) arguments the pointers. One packed launch so serves every row count
        of a plan (`launch_types.RowPlan`)."""
        self._locked(stream, leading, m_slot, M, (grid, 1, 1, *self._args[3:]))

    def _locked(self, stream: int, leading, m_slot: int | None, M: int, args: tuple | None) -> None:
        with self._lock:
            slots = self._slots
            for i, v in enumerate(leading):
                slots[i].value = v
            if m_slot is not None:
                slots[m_slot].value = M
            if self._push:
                with _Current(self.function.device_id):
                    rc = self._raw(stream, args)
            else:
                rc = self._raw(stream, args)
            if rc == CUDA_ERROR_INVALID_CONTEXT:  # a thread that has not touched CUDA yet
                check(_lib().cuCtxSetCurrent(primary_context(self.function.device_id)), "cuCtxSetCurrent")
                rc = self._raw(stream, args)
        if rc != CUDA_SUCCESS:
            raise CudaError(f"launching {self.function.name}", rc)

    def _two_pointers(self):
        """`two(stream, a, b)`: `self(stream, a, b)` for the call every softmax launch makes. Every
        constant is a local of the closure and the pointers are written through memoryviews (no
        attribute lookups, no ctypes conversions); a non-zero result goes to `__call__`, which
        makes a missing context current and retries, or raises (`_failed`)."""
        if self._push or len(self._slots) < 2 or any(ctypes.sizeof(s) != 8 for s in self._slots[:2]):
            return lambda stream, a, b: self(stream, a, b)
        first, second = (memoryview(s).cast("B").cast("Q") for s in self._slots[:2])
        acquire, release = self._lock.acquire, self._lock.release
        launch, fn, argv = self._launch, self._fn, self._argv_pointer
        gx, gy, gz, bx, by, bz, smem = self._args
        failed, streams = self._failed, _streams

        def two(stream: int, a: int, b: int) -> None:
            cu = streams.get(stream)
            if cu is None:
                cu = _stream(stream)
            acquire()
            try:
                first[0] = a
                second[0] = b
                rc = launch(fn, gx, gy, gz, bx, by, bz, smem, cu, argv, None)
            finally:
                release()
            if rc:  # CUresult 0 is success
                failed(rc, stream, a, b)

        return two

    def _failed(self, rc, stream: int, a: int, b: int) -> None:
        """After a launch by `two` returned `rc` (not success): a thread that has not touched CUDA
        yet gets the context made current and the launch again; anything else raises."""
        if int(rc) != CUDA_ERROR_INVALID_CONTEXT:
            raise CudaError(f"launching {self.function.name}", int(rc))
        self(stream, a, b)
