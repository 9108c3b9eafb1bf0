"""The check every planned launch passes, for the test_cuda_plans files: its specialization is
one the offline compile covers, and its block, grid, registers and shared memory stay inside what
the kernel was designed for."""

from __future__ import annotations

import math

from kernels_cuda import arrays
from kernels_cuda import softmax_variants as variants

ALL_SPECS = set(variants.specializations())


def _check_launch(
    launch: variants.Launch,
    variant: str,
    M: int,
    N: int,
    dtype: str,
    vec: int,
    device: variants.Device,
    same_offsets: bool = False,
) -> None:
    spec = launch.spec
    c = dict(spec.constants)
    assert spec in ALL_SPECS, spec.name  # so the offline compile covers it
    assert spec.dtype == dtype and spec.min_cc <= device.cc
    assert 1 <= launch.block <= 1024 and 1 <= launch.grid <= variants.MAX_GRID
    if spec.kernel == "softmax_cluster":  # 16-byte packs for the body whatever N; head and tail apart
        assert vec == c["VEC"] == variants.full_vec(dtype) or same_offsets
        vec = c["VEC"]
    assert c.get("VEC", vec) == vec
    if spec.kernel == "softmax_fused":
        assert c["TPR"] * c["ITEMS"] * vec >= N  # the whole row fits the registers
        assert launch.block == c["TPR"] * c["RPB"] and launch.grid * c["RPB"] >= min(M, variants.MAX_GRID)
    elif spec.kernel == "softmax_cluster":
        (chunk,) = launch.extra
        assert chunk == math.ceil(math.ceil(N / spec.cluster) / vec) * vec  # the smallest chunk that covers N
        assert launch.grid % spec.cluster == 0 and launch.grid // spec.cluster == min(
            M, variants.MAX_GRID // spec.cluster
        )
        if c["ITEMS"]:  # held in registers: every thread's packs cover the chunk
            assert c["ITEMS"] * launch.block * vec >= chunk and launch.shared_mem == 0
        else:
            assert launch.shared_mem == chunk * arrays.ITEMSIZE[dtype] <= device.max_shared_per_block - 1024
    else:
        assert launch.shared_mem == 0 and launch.extra == ()
