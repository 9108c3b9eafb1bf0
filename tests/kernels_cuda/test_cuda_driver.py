"""PackedLaunch's call into cuLaunchKernel without a GPU: what the driver receives.

The launch function has no argtypes (_driver.py says why), so each argument reaches C as the
object passed: a plain int would arrive as a 32-bit C int. Here cuLaunchKernel is a C callback
with the driver's prototype, and the test checks what it reads: the 64-bit function, stream and
argument-array pointers intact, the grid and block, and through the argument array the values
the call wrote into the slots.
"""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import pytest
from kernels_cuda import _driver

_p, _u = ctypes.c_void_p, ctypes.c_uint
PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int, _p, _u, _u, _u, _u, _u, _u, _u, _p, _p, _p)
FUNCTION = 0x7F00_1234_5000  # handles above 2**32, as real ones are
STREAMS = (0, 0x5555_DEAD_B000)


@pytest.fixture
def driver(monkeypatch):
    """(seen, launch): every cuLaunchKernel call as the C side read it; the result code comes
    from launch.rc."""
    seen = []
    launch = SimpleNamespace(rc=0)

    def cu_launch_kernel(fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        args = ctypes.cast(params, ctypes.POINTER(_p))
        values = (
            ctypes.c_uint64.from_address(args[0]).value,
            ctypes.c_uint64.from_address(args[1]).value,
            ctypes.c_int.from_address(args[2]).value,
        )
        seen.append((fn, (gx, gy, gz), (bx, by, bz), smem, stream or 0, values, extra))
        return launch.rc

    callback = PROTOTYPE(cu_launch_kernel)
    # the same kind of object _launch_kernel returns: a function pointer without argtypes
    raw = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.cast(callback, _p).value)
    monkeypatch.setattr(_driver, "_launch_kernel", lambda: raw)
    monkeypatch.setattr(_driver, "device_count", lambda: 1)
    yield seen, launch
    del callback  # alive until here: the driver's stand-in is this C callback


def packed(grid=(40000, 1, 1), block=(128, 1, 1), shared=4096):
    function = SimpleNamespace(handle=FUNCTION, max_dynamic_shared=48 * 1024, device_id=0, name="k")
    types = (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int)
    return _driver.PackedLaunch(function, grid, block, shared, types, (0, 0, 7))


@pytest.mark.parametrize("stream", STREAMS)
def test_launch_passes_every_argument_intact(driver, stream):
    seen, _ = driver
    a, b = 0x7F12_3456_0000, 0x7F12_3457_0100
    launch = packed()
    launch.two(stream, a, b)
    launch(stream, b, a)
    launch.rows(stream, 3, 2, 11, a, b)
    assert seen == [
        (FUNCTION, (40000, 1, 1), (128, 1, 1), 4096, stream, (a, b, 7), None),
        (FUNCTION, (40000, 1, 1), (128, 1, 1), 4096, stream, (b, a, 7), None),
        (FUNCTION, (3, 1, 1), (128, 1, 1), 4096, stream, (a, b, 11), None),
    ]


def test_a_failed_launch_raises_with_the_drivers_code(driver, monkeypatch):
    _, launch_state = driver
    monkeypatch.setattr(_driver, "error_name", lambda code: f"E{code}")
    launch_state.rc = 1
    with pytest.raises(_driver.CudaError, match=r"launching k failed: E1 \(1\)"):
        packed().two(0, 1, 2)
