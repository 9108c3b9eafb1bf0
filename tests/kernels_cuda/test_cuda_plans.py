"""Launch planning without a GPU: what each variant launches for a shape, and that every plan
stays inside what the kernels were compiled and designed for."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kernels_cuda import arrays
from kernels_cuda import softmax_variants as sm

DEVICES = {"H100": sm.H100, "A100": sm.A100}
ALL_SPECS = set(sm.specializations())


def _check_launch(
    launch: sm.Launch, variant: str, M: int, N: int, dtype: str, vec: int, device: sm.Device
) -> None:
    spec = launch.spec
    c = dict(spec.constants)
    assert spec in ALL_SPECS, spec.name  # so the offline compile covers it
    assert spec.dtype == dtype and spec.min_cc <= device.cc
    assert 1 <= launch.block <= 1024 and 1 <= launch.grid <= sm.MAX_GRID
    assert c.get("VEC", vec) == vec
    if spec.kernel == "softmax_fused":
        assert c["TPR"] * c["ITEMS"] * vec >= N  # the whole row fits the registers
        assert launch.block == c["TPR"] * c["RPB"] and launch.grid * c["RPB"] >= min(M, sm.MAX_GRID)
    elif spec.kernel == "softmax_cluster":
        (chunk,) = launch.extra
        assert chunk == math.ceil(math.ceil(N / spec.cluster) / vec) * vec  # the smallest chunk that covers N
        assert launch.grid % spec.cluster == 0 and launch.grid // spec.cluster == min(
            M, sm.MAX_GRID // spec.cluster
        )
        assert launch.shared_mem == chunk * arrays.ITEMSIZE[dtype] <= device.max_shared_per_block - 1024
    elif spec.kernel == "softmax_split":
        chunk, split = launch.extra
        assert chunk % vec == 0 and split * chunk >= N > (split - 1) * chunk
        assert split <= sm.SPLIT_MAX_BLOCKS_PER_ROW and launch.grid == M * split
        assert launch.shared_mem == chunk * arrays.ITEMSIZE[dtype] <= device.max_shared_per_block - 1024
        assert launch.workspace_bytes == 4 * (2 + 2 * M) + 8 * M * split
    else:
        assert launch.shared_mem == 0 and launch.extra == ()


@given(
    M=st.integers(1, 10**7),
    N=st.integers(1, 4 * 10**6),
    dtype=st.sampled_from(sm.DTYPES),
    aligned=st.booleans(),
    device=st.sampled_from(sorted(DEVICES)),
    variant=st.sampled_from(sm.VARIANTS),
)
def test_every_plan_is_a_compiled_specialization_within_its_limits(M, N, dtype, aligned, device, variant):
    vec = sm.full_vec(dtype) if aligned and N % sm.full_vec(dtype) == 0 else 1
    dev = DEVICES[device]
    if variant == "v3" and N > sm.fused_capacity(vec):
        with pytest.raises(ValueError, match="v3 holds rows of at most"):
            sm.plan(variant, M, N, dtype, vec, dev)
        return
    _check_launch(sm.plan(variant, M, N, dtype, vec, dev), variant, M, N, dtype, vec, dev)


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
@pytest.mark.parametrize("dtype", sm.DTYPES)
def test_fused_ladder_covers_every_row_up_to_its_capacity(N, dtype):
    for vec in (sm.full_vec(dtype), 1):
        if N % vec or N > sm.fused_capacity(vec):
            continue
        launch = sm.plan("v3", 1000, N, dtype, vec, sm.H100)
        _check_launch(launch, "v3", 1000, N, dtype, vec, sm.H100)
        c = dict(launch.spec.constants)
        assert (
            c["ITEMS"] == 1 or c["TPR"] * c["ITEMS"] * vec < 2 * N + c["TPR"] * vec
        )  # no more than 2x padding


# The shapes the performance target names, and what auto runs for them on an H100.
TARGETS = [
    (4096, 600),
    (65536, 600),
    (262144, 600),
    (32768, 1024),
    (16384, 4096),
    (8192, 8192),
    (4096, 32768),
    (1024, 131072),
    (256, 262144),
]


@pytest.mark.parametrize("M,N", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_auto_runs_the_fused_kernel_on_short_rows_and_clusters_on_long_ones_on_hopper(M, N, dtype):
    vec = sm.pack_width(dtype, N, (0, 0), (N, N))
    assert vec == sm.full_vec(dtype)  # every target row is a whole number of 16-byte packs
    launch = sm.plan("auto", M, N, dtype, vec, sm.H100)
    row_bytes = N * arrays.ITEMSIZE[dtype]
    if row_bytes <= sm.AUTO.fused_max_row_bytes:
        assert launch.spec.kernel == "softmax_fused"
    elif M <= sm.AUTO.split_max_rows and row_bytes >= sm.AUTO.split_min_row_bytes:
        assert launch.spec.kernel == "softmax_split"
    else:
        assert launch.spec.kernel == "softmax_cluster"
        (chunk,) = launch.extra
        assert chunk * arrays.ITEMSIZE[dtype] <= 64 * 1024  # several chunks share an SM
    # Without clusters (A100) the same shapes run v3 up to its capacity, then the online kernel.
    a100 = sm.plan("auto", M, N, dtype, vec, sm.A100).spec.kernel
    assert a100 == ("softmax_fused" if N <= sm.fused_capacity(vec) else "softmax_online")


def test_v4_falls_back_to_the_online_kernel_without_clusters_or_beyond_their_capacity():
    assert sm.plan("v4", 64, 100_000, "float32", 4, sm.A100).spec.kernel == "softmax_online"
    assert sm.plan("v4", 64, 100_000, "float32", 4, sm.H100).spec.kernel == "softmax_cluster"
    huge = 16 * sm.H100.max_shared_per_block // 4 + 4096  # past 16 blocks x 227 KB of fp32
    assert sm.plan("v4", 1, huge, "float32", 4, sm.H100).spec.kernel == "softmax_online"
    # a device that refused 16-block clusters gets at most 8, with chunks up to a block's limit
    eight = sm.Device(cc=90, max_shared_per_block=227 * 1024, max_cluster=8)
    assert sm.plan("v4", 1, 262144, "float32", 4, eight).spec.cluster == 8


def test_auto_config_moves_the_v3_v4_boundary_and_v3s_packs_per_thread():
    try:
        sm.set_auto_config(fused_max_row_bytes=128 * 1024, fused_packs_f32=8)
        assert sm._plan("auto", 100, 32768, "float32", 4, sm.H100).spec.kernel == "softmax_fused"
        assert dict(sm._plan("auto", 100, 600, "float32", 4, sm.H100).spec.constants)["ITEMS"] == 8
    finally:
        sm.set_auto_config(
            fused_max_row_bytes=sm.AutoConfig.fused_max_row_bytes,
            fused_packs_f32=sm.AutoConfig.fused_packs_f32,
        )
    assert sm._plan("auto", 100, 32768, "float32", 4, sm.H100).spec.kernel == "softmax_cluster"
    assert dict(sm._plan("auto", 100, 600, "float32", 4, sm.H100).spec.constants)["ITEMS"] == 2


def test_pack_width_uses_16_bytes_only_when_every_row_start_is_16_byte_aligned():
    assert sm.pack_width("float32", 600, (256, 512), (600, 600)) == 4  # 2400 B rows
    assert sm.pack_width("bfloat16", 600, (256, 512), (600, 600)) == 8  # 1200 B rows
    assert sm.pack_width("float32", 602, (256, 512), (602, 602)) == 1  # N not a multiple of 4
    assert sm.pack_width("float16", 600, (256 + 2, 512), (600, 600)) == 1  # an offset view
    assert sm.pack_width("float32", 600, (256, 512), (602, 600)) == 1  # a 2408 B row stride
    assert sm.pack_width("float32", 600, (256, 512), (0, 600)) == 4  # a broadcast row (stride 0)


@pytest.mark.parametrize(
    "shape,strides,expected",
    [
        ((4, 5), (5, 1), 5),  # contiguous
        ((4, 5), (8, 1), 8),  # rows sliced out of a wider array
        ((2, 3, 5), (30, 10, 1), 10),  # leading dims collapse into one row stride
        ((2, 3, 5), (40, 10, 1), None),  # ... or do not
        ((4, 5), (1, 4), None),  # transposed: elements are not adjacent
        ((1, 5), (99, 1), 5),  # one row: its stride does not matter
        ((3, 1, 5), (5, 77, 1), 5),  # size-1 dims impose nothing
        ((4, 5), (0, 1), 0),  # a broadcast row
        ((4, 1), (3, 9), 3),  # N = 1: the element stride does not matter
    ],
)
def test_row_stride(shape, strides, expected):
    assert arrays.row_stride(shape, strides) == expected


def test_normalize_dim():
    assert arrays.normalize_dim(-1, 3, "f") == 2 and arrays.normalize_dim(0, 0, "f") == 0
    with pytest.raises(ValueError, match="dim 3 is out of range for a 3-d input"):
        arrays.normalize_dim(3, 3, "f")
    with pytest.raises(TypeError, match="dim must be an int"):
        arrays.normalize_dim(1.0, 3, "f")


def test_cluster_split_prefers_small_clusters_with_chunks_that_share_an_sm():
    cfg = sm.AutoConfig()
    assert sm.cluster_split(16384, "float32", 4, sm.H100, cfg) == (2, 8192)
    assert sm.cluster_split(32768, "bfloat16", 8, sm.H100, cfg) == (2, 16384)
    assert sm.cluster_split(262144, "float32", 4, sm.H100, cfg) == (16, 16384)  # 64 KB: none reaches 32 KB
    c, chunk = sm.cluster_split(40001, "float32", 1, sm.H100, cfg)
    assert c * chunk >= 40001 and math.ceil(40001 / c) == chunk


@pytest.mark.parametrize("M,N", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_tune_candidates_start_with_autos_plan_and_each_holds_the_row(M, N, dtype):
    from kernels_cuda import tune

    cands = tune.candidates(M, N, dtype, sm.H100)
    assert cands[0].launch == sm.plan("auto", M, N, dtype, sm.full_vec(dtype), sm.H100)
    assert len({c.launch for c in cands}) == len(cands) >= 2
    for c in cands:
        k = dict(c.launch.spec.constants)
        if c.launch.spec.kernel == "softmax_fused":
            assert k["TPR"] * k["ITEMS"] * k["VEC"] >= N and k["ITEMS"] <= sm.fused_items_max(k["VEC"])
        elif c.launch.spec.kernel == "softmax_cluster":
            (chunk,) = c.launch.extra
            assert chunk * k["CLUSTER"] >= N and c.launch.shared_mem <= sm.H100.max_shared_per_block - 1024
