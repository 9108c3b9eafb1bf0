"""What the plan tests share: the inputs a plan depends on, drawn by Hypothesis (forward and
backward alike), and the check every planned forward launch passes: its specialization is one the
offline compile covers, and its block, grid, registers and shared memory stay inside what the
kernel was designed for."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st
from kernels_cuda import arrays
from kernels_cuda import softmax_variants as variants

ALL_SPECS = set(variants.specializations())
DEVICES = {"H100": variants.H100, "A100": variants.A100}


def any_plan(plan_variants):
    """@given over everything a plan depends on: M, N, dtype, whether the rows are 16-byte packs,
    the device, the variant (one of plan_variants), shared offsets, batch invariance."""
    return given(
        M=st.integers(1, 10**7),
        N=st.integers(1, 4 * 10**6),
        dtype=st.sampled_from(variants.DTYPES),
        aligned=st.booleans(),
        device=st.sampled_from(sorted(DEVICES)),
        variant=st.sampled_from(plan_variants),
        same_offsets=st.booleans(),
        invariant=st.booleans(),
    )


def packs_and_offsets(dtype: str, N: int, aligned: bool, same_offsets: bool) -> tuple[int, bool]:
    """(vec, same_offsets) of a drawn plan: 16-byte packs where drawn and N is whole packs, else
    elements; whole packs always share their offsets."""
    vec = variants.full_vec(dtype) if aligned and N % variants.full_vec(dtype) == 0 else 1
    return vec, same_offsets or vec > 1


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
