"""A stand-in for codegen.packed's PackedLaunch on CPU (tests/kernels_cuda's launch-path tests): the
softmax, or its backward, that the packed arguments ask for, computed over CPU memory in float64."""

from __future__ import annotations

import ctypes

import numpy as np
from labtools.ops import softmax_ref


class HostLaunch:
    """Stands in for codegen.packed's PackedLaunch: computes the softmax (or its backward) the
    packed arguments ask for over CPU memory, in float64, and counts packings."""

    packed = 0

    def __init__(self, spec, device_id, grid, block, shared_mem, types, values):
        HostLaunch.packed += 1
        self.spec, self.values = spec, list(values)

    def _rows(self, address, stride, m, n):
        size = np.dtype(self.spec.dtype).itemsize
        flat = np.ctypeslib.as_array((ctypes.c_byte * (((m - 1) * stride + n) * size)).from_address(address))
        return np.lib.stride_tricks.as_strided(flat.view(self.spec.dtype), (m, n), (stride * size, size))

    def __call__(self, stream, *pointers):
        if "backward" in self.spec.kernel:
            m, n, ys, dys, dxs = (int(v) for v in self.values[3:8])
            y, dy = (self._rows(p, s, m, n).astype(np.float64) for p, s in zip(pointers, (ys, dys)))
            self._rows(pointers[2], dxs, m, n)[...] = y * (dy - (y * dy).sum(-1, keepdims=True))
            return
        m, n, xs, ys = (int(v) for v in self.values[2:6])
        x = self._rows(pointers[0], xs, m, n).astype(np.float64)
        self._rows(pointers[1], ys, m, n)[...] = softmax_ref(x, axis=-1)

    two = __call__

    def rows(self, stream, grid, m_slot, M, *pointers):
        self.values[m_slot] = M
        self(stream, *pointers)
