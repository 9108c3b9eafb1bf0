"""The device a plan is made for: its properties, read once through the driver, less a cluster
size it refused at launch (`refused`: every op's launch of a cluster of more than 8 blocks goes
through it where the launch raised)."""

from __future__ import annotations

import ctypes
import warnings
from dataclasses import replace
from functools import cache

from kernels_cuda import codegen
from kernels_cuda.launch_types import Device

# CUdevice_attribute values (cuda.h) beyond those _driver names
DEV_MEMORY_CLOCK_RATE, DEV_GLOBAL_MEMORY_BUS_WIDTH, DEV_MAX_THREADS_PER_MULTIPROCESSOR = 36, 37, 39


@cache
def _device_props(device_id: int) -> Device:
    from kernels_cuda import _driver

    def attribute(a: int) -> int:
        return _driver.device_attribute(device_id, a)

    name = ctypes.create_string_buffer(256)
    _driver.check(_driver._lib().cuDeviceGetName(name, 256, _driver._device(device_id)), "cuDeviceGetName")
    return Device(
        cc=int(codegen.device_arch(device_id).removeprefix("sm_")),
        max_shared_per_block=attribute(_driver.DEV_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        sms=attribute(_driver.DEV_MULTIPROCESSOR_COUNT),
        name=name.value.decode(),
        # kHz x 2 (double data rate) x bus bytes
        bandwidth=2e3 * attribute(DEV_MEMORY_CLOCK_RATE) * attribute(DEV_GLOBAL_MEMORY_BUS_WIDTH) / 8,
        threads_per_sm=attribute(DEV_MAX_THREADS_PER_MULTIPROCESSOR),
    )


REFUSED_CLUSTER16: set[int] = set()  # devices that refused a cluster of more than 8 blocks: planned with 8
PORTABLE_CLUSTER = 8  # the largest cluster every sm_90 device launches (more needs the non-portable size)


def max_cluster(device_id: int) -> int:
    """The most blocks a cluster of a plan for this device may have: PORTABLE_CLUSTER once it
    refused more, else `Device`'s default."""
    return PORTABLE_CLUSTER if device_id in REFUSED_CLUSTER16 else Device.max_cluster


def device_for(device_id: int) -> Device:
    d = _device_props(device_id)
    return replace(d, max_cluster=PORTABLE_CLUSTER) if device_id in REFUSED_CLUSTER16 else d


def refused(exc: BaseException, device_id: int, cluster: int) -> bool:
    """Whether `exc`, raised by a launch of clusters of `cluster` blocks (0: no cluster) on
    device_id, is the device refusing a cluster of more than 8 blocks (a MIG slice, a GPU whose
    GPCs hold fewer than 16 free SMs): an error that names a cluster, at more than 8 blocks. Then
    the device joins REFUSED_CLUSTER16 (one RuntimeWarning, the first time), every cached plan is
    dropped (`softmax_caches.clear_caches`, the family's too) and the caller plans again and
    launches: `device_for` and `max_cluster` give it clusters of at most 8 blocks from now on.
    False: any other error, or a refusal at 8 blocks or fewer (a real error), for the caller to
    raise as it is. Called only where a launch raised: a launch that runs costs nothing more."""
    if cluster <= PORTABLE_CLUSTER or "CLUSTER" not in _error_text(exc).upper():
        return False
    if device_id not in REFUSED_CLUSTER16:
        REFUSED_CLUSTER16.add(device_id)
        warnings.warn(
            f"device {device_id} refused a {cluster}-block cluster ({exc}); kernels_cuda uses clusters "
            f"of at most {PORTABLE_CLUSTER} blocks on it from now on",
            RuntimeWarning,
            stacklevel=3,
        )
    from kernels_cuda.softmax_caches import clear_caches

    clear_caches()  # (a plan made before the device joined, in another thread, goes too)
    return True


def _error_text(exc: BaseException) -> str:
    """What of exc's message names the error: a driver error's name alone (its message names the
    kernel too, and every cluster kernel's name says "cluster"), else the whole message."""
    from kernels_cuda import _driver

    return exc.error if isinstance(exc, _driver.CudaError) else str(exc)
