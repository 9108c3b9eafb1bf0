"""Launch planning without a GPU: every plan, over any shape, dtype, device and configuration,
is a compiled specialization and stays inside what the kernels were compiled and designed for
(the row held in registers, shared memory, grid and block sizes, packs left unchecked)."""

from __future__ import annotations

import pytest
from cuda_plan_helpers import DEVICES, _check_launch, any_plan, packs_and_offsets
from hypothesis import given, settings
from hypothesis import strategies as st
from kernels_cuda import softmax_variants as variants


@any_plan(variants.VARIANTS)
def test_every_plan_is_a_compiled_specialization_within_its_limits(
    M, N, dtype, aligned, device, variant, same_offsets, invariant
):
    vec, same_offsets = packs_and_offsets(dtype, N, aligned, same_offsets)
    dev = DEVICES[device]
    if variant == "v3" and N > variants.fused_capacity(vec):
        with pytest.raises(ValueError, match="v3 holds rows of at most"):
            variants.plan(variant, M, N, dtype, vec, dev, None, same_offsets, invariant)
        return
    launch = variants.plan(variant, M, N, dtype, vec, dev, None, same_offsets, invariant)
    _check_launch(launch, variant, M, N, dtype, vec, dev, same_offsets)


@pytest.mark.parametrize(
    "N",
    [
        1,
        2,
        3,
        4,
        31,
        32,
        33,
        127,
        128,
        129,
        600,
        1023,
        1024,
        1025,
        4096,
        8191,
        8192,
        16383,
        16384,
        16385,
        32767,
        32768,
    ],
)
@pytest.mark.parametrize("dtype", variants.DTYPES)
def test_fused_ladder_covers_every_row_up_to_its_capacity(N, dtype):
    for vec in (variants.full_vec(dtype), 1):
        if N % vec or N > variants.fused_capacity(vec):
            continue
        launch = variants.plan("v3", 1000, N, dtype, vec, variants.H100)
        _check_launch(launch, "v3", 1000, N, dtype, vec, variants.H100)
        c = dict(launch.spec.constants)
        assert (
            c["ITEMS"] == 1 or c["TPR"] * c["ITEMS"] * vec < 2 * N + c["TPR"] * vec
        )  # no more than 2x padding


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_ladder_launches_leave_unchecked_the_packs_inside_every_row(dtype):
    """A ladder rung's launch of 16-byte packs knows N: all of a thread's packs lie inside the
    row where it fills the rung, all but the last where the row reaches past the rung's
    last-but-one pack, else none is assumed inside (every pack checked). Each rung has those
    three forms only."""
    vec = variants.full_vec(dtype)
    known = set(variants.specializations())  # (built once: it is every specialization)
    for rung_tpr, rung_items in variants.fused_ladder(vec, variants.fused_packs(dtype, vec, variants.AUTO)):
        for packs in range(max(1, (rung_tpr * rung_items) // 2), rung_tpr * rung_items + 1):
            launch = variants.plan("auto", 1 << 20, packs * vec, dtype, vec, variants.H100)
            c = dict(launch.spec.constants)
            if launch.spec.kernel != "softmax_fused" or (c["TPR"], c["ITEMS"]) != (rung_tpr, rung_items):
                continue
            full = c.get("FULL", 0)
            assert full in (0, c["ITEMS"] - 1, c["ITEMS"]), (packs, c)
            assert full * c["TPR"] <= packs, (packs, c)  # no unchecked pack past the row
            assert full == 0 or (full + 1) * c["TPR"] > packs or full == c["ITEMS"], (packs, c)
            assert launch.spec in known


@settings(max_examples=300)  # plain Python, a millisecond an example
@given(
    N=st.integers(4096, 1 << 20),
    dtype=st.sampled_from(variants.DTYPES),
    chunk_kb=st.integers(1, 1024),
    max_cluster=st.sampled_from(variants.CLUSTER_SIZES),
)
def test_a_cluster_launch_fits_shared_memory_whatever_the_configured_chunk(N, dtype, chunk_kb, max_cluster):
    """cluster_chunk_bytes past what a block holds still plans a launch that fits (or none)."""
    cfg = variants.AutoConfig(cluster_chunk_bytes=chunk_kb * 1024, max_cluster=max_cluster)
    vec = variants.full_vec(dtype)
    launch = variants.plan_cluster(N - N % vec, dtype, vec, variants.H100, cfg)
    if launch is not None:
        assert launch.shared_mem <= variants.H100.max_shared_per_block - 1024
        assert launch.spec.cluster * launch.extra[0] >= N - N % vec
