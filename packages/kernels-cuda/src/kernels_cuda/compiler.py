"""Compiling one Spec for one architecture: its cubin, PTX and ptxas' resource report, from
memory, from the verified disk cache (_diskcache.py) or from NVRTC, in that order.

A cache entry's key hashes the sources, the options, the architecture and the NVRTC version; the
cache lives in $KERNELS_CUDA_CACHE_DIR, else ~/.cache/kernels-cuda.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
import warnings
from dataclasses import asdict, fields
from functools import cache
from pathlib import Path

from kernels_cuda import _diskcache
from kernels_cuda.codegen_types import Compiled, Resources, Spec

SOURCE_DIR = Path(__file__).parent / "cuda"
CACHE_ENV = "KERNELS_CUDA_CACHE_DIR"
INSTALL_HINT = (
    "kernels_cuda compiles its kernels with NVRTC through CuPy, which is not installed: "
    "pip install 'kernel-lab-kernels-cuda[cuda13]' (or '[cuda12]' for a CUDA 12 driver)"
)


class CompileError(RuntimeError):
    pass


class CacheWarning(UserWarning):
    """A disk-cache entry failed verification and is rebuilt."""


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
