"""The device a plan is made for: its properties, read once through the driver, less a cluster
size it refused at launch."""

from __future__ import annotations

import ctypes
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


REFUSED_CLUSTER16: set[int] = set()  # devices that refused a 16-block cluster: planned with 8


def device_for(device_id: int) -> Device:
    d = _device_props(device_id)
    return replace(d, max_cluster=8) if device_id in REFUSED_CLUSTER16 else d
