"""The registry of specializations: each kernel module registers the function that lists every
Spec it can launch, and `all_specs` collects them for the offline compile. The registry names
no kernel module: the package lists them (`kernels_cuda.KERNEL_MODULES`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kernels_cuda.codegen_types import Spec

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
