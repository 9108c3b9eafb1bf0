"""An index of our own from a launch's specialization to the kernel Triton compiled for it,
so that a new process launches a kernel compiled by an earlier one without Triton's JIT.

Why: Triton's compile cache is keyed on a hash of Triton's whole installation (its Python
sources and libtriton: `triton.runtime.cache.triton_key`), computed once per process, and
the JIT's first argument binding imports the Gluon modules. Together they are most of a
first call on a row length the process has not seen, even with the kernel already on disk.

The key here stands for what Triton's does, computed cheaply: Triton's version and the
size and modification time of every file its installation hash reads, the kernel's own
source hash (JITFunction.cache_key, which covers the helpers it calls), the launch's
specialization (launch.py's compiled-kernel key), the GPU's compute capability, and
Triton's cache-invalidating environment variables and debug flags. An entry names Triton's
cache entry and the SHA-256 of each of its files; a load checks every file against the
entry and, on any difference or error, returns None: the launch then goes through the JIT,
which compiles or finds the kernel as usual and records a fresh entry.

Entries are files in Triton's cache directory, written through Triton's cache manager
(temporary file, then rename), so clearing Triton's cache clears them too. Not used under
the interpreter, with knobs.compilation.always_compile, or while a JIT hook is installed
(whoever installed it expects to see every compile).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading

import triton

FORMAT = 2
ENTRY_FILE = "kernels_triton_index.json"
# The head start on the JIT's once-per-process work (launch.warm_up_in_background's thread): a
# launch that goes through the JIT waits for it rather than redo that work beside it; a launch
# an entry here serves does not wait.
warm_up: threading.Thread | None = None


def wait_for_warm_up() -> None:
    if warm_up is not None:
        warm_up.join()


# The kernels this process has loaded or compiled, by (kernel, specialization, device index):
# another plan or another row count that needs one finds it here, with no key to hash.
_LOADED: dict[tuple, object] = {}
MAX_LOADED = 4096


def load_or_compile(kernel, specialization: tuple, device_index: int, compile):
    """The CompiledKernel for `kernel` launched with `specialization` on CUDA device
    `device_index`: one this process already has, else the one an earlier process recorded (no
    trip through Triton's JIT), else compile() (Triton's JIT, once the warm-up thread's head
    start is done), recorded for the next process. Handles initialised."""
    mine = (kernel, specialization, device_index)
    compiled = _LOADED.get(mine)
    if compiled is not None:
        return compiled
    index_key = key(kernel, specialization, _capability(device_index))
    compiled = load(index_key, kernel)
    if compiled is None:
        wait_for_warm_up()
        compiled = compile()
        record(index_key, compiled)
    compiled._init_handles()
    if len(_LOADED) >= MAX_LOADED:
        _LOADED.clear()
    _LOADED[mine] = compiled
    return compiled


@functools.cache
def _capability(device_index: int) -> tuple[int, int]:
    import torch

    return torch.cuda.get_device_capability(device_index)


_PLAIN = (bool, int, float, str, type(None))  # values that survive a JSON round trip unchanged


def usable() -> bool:
    knobs = getattr(triton, "knobs", None)
    if knobs is None:
        return False
    runtime, compilation = knobs.runtime, knobs.compilation
    return not (
        getattr(compilation, "always_compile", False)
        or getattr(runtime, "jit_cache_hook", None)
        or getattr(runtime, "jit_post_compile_hook", None)
    )


@functools.cache
def installation() -> str:
    """A digest of Triton's version and of the size and mtime of every file its installation
    hash reads (runtime/cache.py, compiler/, backends/ with ptxas, language/, _C/)."""
    root = os.path.dirname(os.path.abspath(triton.__file__))
    paths = [os.path.join(root, "runtime", "cache.py")]
    for sub in ("compiler", "backends", "language", "_C"):
        for folder, dirs, names in os.walk(os.path.join(root, sub)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            paths += [os.path.join(folder, name) for name in sorted(names)]
    digest = hashlib.sha256(triton.__version__.encode())
    for path in paths:
        stat = os.stat(path)
        digest.update(f"{os.path.relpath(path, root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def key(kernel, specialization: tuple, capability: tuple[int, int]) -> str | None:
    """The index key of `kernel` (a JITFunction) launched with `specialization` on a GPU of
    this compute capability; None where the index is not used."""
    if not usable() or not isinstance(kernel, triton.runtime.JITFunction):
        return None
    from triton._C.libtriton import get_cache_invalidating_env_vars

    knobs = triton.knobs
    parts = (
        FORMAT,
        triton.__version__,
        installation(),
        kernel.cache_key,
        bool(getattr(kernel, "debug", False) or getattr(knobs.runtime, "debug", False)),
        str(getattr(knobs.compilation, "instrumentation_mode", "")),
        repr(specialization),
        tuple(capability),
        sorted(get_cache_invalidating_env_vars().items()),
    )
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _pairs(mapping: dict) -> list | None:
    """{(i,): value} as [[[i], value], ...], or None if a value would not come back equal."""
    pairs = [[list(k), v] for k, v in mapping.items()]
    plain = all(isinstance(k, tuple) for k in mapping) and all(
        isinstance(v, _PLAIN) or (isinstance(v, list) and json.loads(json.dumps(v)) == v)
        for v in mapping.values()
    )
    return pairs if plain else None


def record(index_key: str | None, compiled) -> bool:
    """Write the entry for a kernel Triton compiled (or found) for `index_key`. False when
    nothing was written: no key, or a kernel whose source or files this index cannot
    describe. An index only saves time, so a failure to write one is not an error."""
    from triton.runtime.cache import get_cache_manager

    if index_key is None:
        return False
    try:
        src = compiled.src
        constants, attrs = _pairs(src.constants), _pairs(src.attrs)
        if constants is None or attrs is None or not all(isinstance(v, str) for v in src.signature.values()):
            return False
        entry = {
            "format": FORMAT,
            "key": index_key,
            "hash": compiled.hash,
            "files": {name: _sha256(path) for name, path in compiled.metadata_group.items()},
            "signature": list(src.signature.items()),  # pairs: the order is the arguments' order
            "constants": constants,
            "attrs": attrs,
        }
        get_cache_manager(index_key).put(json.dumps(entry), ENTRY_FILE, binary=False)
    except (AttributeError, OSError, TypeError, ValueError):
        return False
    return True


def load(index_key: str | None, kernel):
    """The CompiledKernel an earlier process recorded for `index_key`, every file checked
    against its entry; None on a miss or any mismatch."""
    from triton.compiler import ASTSource
    from triton.compiler.compiler import CompiledKernel
    from triton.runtime.cache import get_cache_manager

    if index_key is None:
        return None
    path = get_cache_manager(index_key).get_file(ENTRY_FILE)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            entry = json.load(f)
        if entry.get("format") != FORMAT or entry.get("key") != index_key:
            return None
        files = get_cache_manager(entry["hash"])
        group = {}
        for name, digest in entry["files"].items():
            file = files.get_file(name)
            if file is None or _sha256(file) != digest:
                return None
            group[name] = file
        src = ASTSource(
            kernel,
            dict(entry["signature"]),
            constexprs={tuple(k): v for k, v in entry["constants"]},
            attrs={tuple(k): v for k, v in entry["attrs"]},
        )
        return CompiledKernel(src, group, entry["hash"])
    except (AttributeError, KeyError, OSError, StopIteration, TypeError, ValueError):
        return None
