"""Launch planning without a GPU: which kernel, cluster size and packs a thread each variant
plans for a shape, on Hopper and without clusters, how the auto configuration moves those
choices, and the candidates the tuner tries. That every plan stays inside what the kernels were
compiled and designed for is in test_cuda_plans_limits; how an input layout becomes what its
launch needs (M, N, row strides, pack width) is in test_cuda_plans_layouts."""

from __future__ import annotations

import math

import pytest
from cuda_plan_helpers import _check_launch
from kernels_cuda import arrays
from kernels_cuda import softmax_variants as variants
from labtools.sweep import SWEEP_SHAPES

# The shapes the performance target names (the sweep's), and what auto runs for them on an H100.
TARGETS = list(SWEEP_SHAPES)


@pytest.mark.parametrize("M,N", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_auto_runs_the_fused_kernel_on_short_rows_and_clusters_on_long_ones_on_hopper(M, N, dtype):
    vec = variants.pack_width(dtype, N, (0, 0), (N, N))
    assert vec == variants.full_vec(dtype)  # every target row is a whole number of 16-byte packs
    launch = variants.plan("auto", M, N, dtype, vec, variants.H100)
    row_bytes = N * arrays.ITEMSIZE[dtype]
    if row_bytes <= variants.AUTO.fused_max_row_bytes:
        assert launch.spec.kernel == "softmax_fused"
    else:
        assert launch.spec.kernel == "softmax_cluster"
        (chunk,) = launch.extra
        assert chunk * arrays.ITEMSIZE[dtype] <= 64 * 1024  # several chunks share an SM
    # Without clusters (A100) the same shapes run v3 up to its capacity, then the online kernel.
    a100 = variants.plan("auto", M, N, dtype, vec, variants.A100).spec.kernel
    assert a100 == ("softmax_fused" if N <= variants.fused_capacity(vec) else "softmax_online")


def test_v4_falls_back_to_the_online_kernel_without_clusters_or_beyond_their_capacity():
    assert variants.plan("v4", 64, 100_000, "float32", 4, variants.A100).spec.kernel == "softmax_online"
    assert variants.plan("v4", 64, 100_000, "float32", 4, variants.H100).spec.kernel == "softmax_cluster"
    huge = 16 * variants.H100.max_shared_per_block // 4 + 4096  # past 16 blocks x 227 KB of fp32
    assert variants.plan("v4", 1, huge, "float32", 4, variants.H100).spec.kernel == "softmax_online"
    # a device that refused 16-block clusters gets at most 8, with chunks up to a block's limit
    eight = variants.Device(cc=90, max_shared_per_block=227 * 1024, sms=132, max_cluster=8)
    assert variants.plan("v4", 1, 262144, "float32", 4, eight).spec.cluster == 8


def test_long_odd_rows_take_the_cluster_kernel_where_x_and_y_share_offsets():
    """64 rows of 50257 bf16 (a GPT-2 vocabulary): whole 16-byte packs they are not, but a fresh
    output shares each row's offset, so the cluster kernel takes them (2 blocks a row, 128 blocks),
    batch-invariant or not: the cluster's split of a row follows the row's own address, not M."""
    invariant = variants.prepare((64, 50257), (50257, 1), "bfloat16", -1, "auto", variants.H100)
    p = variants.prepare(
        (64, 50257), (50257, 1), "bfloat16", -1, "auto", variants.H100, batch_invariant=False
    )
    assert p.launch.spec.kernel == "softmax_cluster" and p.launch.grid == 128
    assert dict(p.launch.spec.constants)["VEC"] == 8 and p.launch.extra == (25136,)
    assert invariant.launch == p.launch
    a100 = variants.prepare(
        (64, 50257), (50257, 1), "bfloat16", -1, "auto", variants.A100, batch_invariant=False
    )
    assert a100.launch.spec.kernel == "softmax_online"
    offset_x = variants.prepare((64, 50257), (50258, 1), "bfloat16", -1, "auto", variants.H100, x_address=2)
    assert offset_x.launch.spec.kernel == "softmax_online"  # the fresh y starts on a 16-byte boundary
    offset_both = variants.prepare(
        (64, 50257),
        (50258, 1),
        "bfloat16",
        -1,
        "auto",
        variants.H100,
        x_address=2,
        out_strides=(50258, 1),
        out_address=2,
    )
    assert offset_both.out_direct and offset_both.launch.spec.kernel == "softmax_cluster"


def test_auto_on_hopper_rows_past_32_kb_take_clusters_else_v3_while_it_holds_them():
    """48 and 64 KB rows: 2-block clusters; a 40 KB row that no cluster takes (x and y rows at
    different offsets) stays on v3, which holds it element-wide and reads it once, and goes to
    the online kernel only past v3's capacity."""
    for n, dtype, cluster in ((12288, "float32", 2), (24576, "bfloat16", 2), (32768, "bfloat16", 2)):
        launch = variants.plan("auto", 4096, n, dtype, variants.full_vec(dtype), variants.H100)
        assert launch.spec.kernel == "softmax_cluster" and launch.spec.cluster == cluster
    assert variants.plan("auto", 64, 8192, "float32", 4, variants.H100).spec.kernel == "softmax_fused"
    odd = variants.prepare((64, 10000), (10001, 1), "float32", -1, "auto", variants.H100, x_address=4)
    assert odd.launch.spec.kernel == "softmax_fused" and dict(odd.launch.spec.constants)["VEC"] == 1
    past_v3 = variants.prepare((64, 20000), (20001, 1), "float32", -1, "auto", variants.H100, x_address=4)
    assert past_v3.launch.spec.kernel == "softmax_online"


@pytest.mark.parametrize(
    "M,N,dtype,items",
    [
        (16, 131072, "float32", 8),  # 16-block clusters of 8192: 2048 packs over 256 threads
        (64, 50257, "float32", 4),  # chunks of 3144: 786 packs, rounded up to a power of two
        (2048, 65536, "float32", 4),
        (256, 262144, "float32", 0),  # 16 packs a thread: in shared memory
        (300, 147456, "float32", 0),  # 9 packs, 16 once rounded up
        (16, 131072, "bfloat16", 4),  # 16-bit: in a launch of one wave of held blocks (256 blocks),
        (32, 131072, "float16", 4),  # 512 blocks: at most 4 an SM of 132 (batch_invariant=False)
        (64, 131072, "bfloat16", 0),  # 1024 blocks: past one wave, in shared memory
        (1, 262144, "bfloat16", 0),  # 8 packs a thread: past cluster_held_packs_16bit
        (64, 50257, "bfloat16", 0),  # 2-block clusters of 25136: 16 packs a thread
    ],
)
def test_v4_holds_chunks_of_a_few_packs_a_thread_in_registers(M, N, dtype, items):
    launch = variants.plan("v4", M, N, dtype, variants.full_vec(dtype), variants.H100, batch_invariant=False)
    assert dict(launch.spec.constants)["ITEMS"] == items
    invariant = variants.plan("v4", M, N, dtype, variants.full_vec(dtype), variants.H100)
    # batch-invariant: 16-bit chunks stay in shared memory whatever M (fp32 ones are held alike)
    assert dict(invariant.spec.constants)["ITEMS"] == (items if dtype == "float32" else 0)
    assert (launch.shared_mem == 0) == (items > 0)
    never = variants.AutoConfig(cluster_held_packs_f32=0, cluster_held_packs_16bit=0)
    launch = variants.plan("v4", M, N, dtype, variants.full_vec(dtype), variants.H100, never)
    assert dict(launch.spec.constants)["ITEMS"] == 0 and launch.shared_mem > 0


@pytest.mark.parametrize(
    "M,N,tpr,items,rpb,full",
    [
        (4096, 600, 32, 5, 4, 4),  # a warp a row, four rows to a 128-thread block: one wave on 132 SMs
        (
            8192,
            600,
            32,
            5,
            4,
            4,
        ),  # 64 rows an SM: still few; 150 packs: the fifth of a thread may be past the row
        (4096, 1024, 32, 8, 4, 8),  # every pack inside the row
        (2048, 1024, 64, 4, 2, 4),  # ~16 rows an SM: 64 threads a row
        (2048, 2048, 64, 8, 2, 8),  # the fewest threads that hold 512 packs at 8 a thread
        (1024, 600, 128, 2, 2, 1),  # the ladder's own launch already fits one wave (full_packs: 150 // 128)
        (16384, 600, 128, 2, 2, 1),  # past 64 rows an SM: the ladder's
        (8192, 8192, 256, 8, 1, 8),  # the ladder's threads are already the fewest that hold the row
    ],
)
def test_fp32_launches_of_few_rows_give_a_row_fewer_threads_of_more_packs(M, N, tpr, items, rpb, full):
    """With batch_invariant=False only: by default every M takes the ladder's launch."""
    launch = variants.plan("auto", M, N, "float32", 4, variants.H100, batch_invariant=False)
    assert variants.plan("auto", M, N, "float32", 4, variants.H100) == variants.plan(
        "auto",
        M,
        N,
        "float32",
        4,
        variants.H100,
        variants.AutoConfig(few_rows_per_sm=0),
        batch_invariant=False,
    )
    expected = {"TPR": tpr, "RPB": rpb, "ITEMS": items, "VEC": 4} | ({"FULL": full} if full else {})
    assert dict(launch.spec.constants) == expected
    assert full * tpr <= N // 4  # packs 0..FULL-1 of every thread lie inside the row
    _check_launch(launch, "auto", M, N, "float32", 4, variants.H100)
    ladder = variants.plan("auto", M, N, "float32", 4, variants.H100, variants.AutoConfig(few_rows_per_sm=0))
    assert dict(ladder.spec.constants)["TPR"] >= tpr
    # 16-bit rows keep the ladder's launch
    bf16 = variants.plan("auto", M, N, "bfloat16", 8, variants.H100, batch_invariant=False)
    assert bf16 == variants.plan(
        "auto", M, N, "bfloat16", 8, variants.H100, variants.AutoConfig(few_rows_per_sm=0)
    )


def test_auto_config_moves_the_v3_v4_boundary_and_v3s_packs_per_thread():
    try:
        variants.set_auto_config(fused_max_row_bytes=128 * 1024, fused_packs_f32=8)
        assert (
            variants.cached_plan("auto", 100, 32768, "float32", 4, variants.H100).spec.kernel
            == "softmax_fused"
        )
        assert (
            dict(variants.cached_plan("auto", 100, 600, "float32", 4, variants.H100).spec.constants)["ITEMS"]
            == 8
        )
    finally:
        variants.set_auto_config(
            fused_max_row_bytes=variants.AutoConfig.fused_max_row_bytes,
            fused_packs_f32=variants.AutoConfig.fused_packs_f32,
        )
    assert (
        variants.cached_plan("auto", 100, 32768, "float32", 4, variants.H100).spec.kernel == "softmax_cluster"
    )
    assert (
        dict(variants.cached_plan("auto", 100, 600, "float32", 4, variants.H100).spec.constants)["ITEMS"] == 2
    )
    # 16-bit rows of 600: 2 packs a thread over 64 threads, two rows to a 128-thread block
    bf16 = variants.cached_plan("auto", 100, 600, "bfloat16", 8, variants.H100)
    # 75 packs over 64 threads: the first of each thread's two lies inside the row
    expected = {"TPR": 64, "RPB": 2, "ITEMS": 2, "VEC": 8, "FULL": 1}
    assert bf16.block == 128 and dict(bf16.spec.constants) == expected


def test_cluster_split_prefers_small_clusters_with_chunks_that_share_an_sm():
    cfg = variants.AutoConfig()
    assert variants.cluster_split(16384, "float32", 4, variants.H100, cfg) == (2, 8192)
    assert variants.cluster_split(32768, "bfloat16", 8, variants.H100, cfg) == (2, 16384)
    assert variants.cluster_split(262144, "float32", 4, variants.H100, cfg) == (
        16,
        16384,
    )  # 64 KB: none reaches 32 KB
    c, chunk = variants.cluster_split(40001, "float32", 1, variants.H100, cfg)
    assert c * chunk >= 40001 and math.ceil(40001 / c) == chunk


def test_cluster_split_gives_rows_from_128_kb_chunks_of_16_kb():
    cfg = variants.AutoConfig()
    assert variants.cluster_split(131072, "bfloat16", 8, variants.H100, cfg) == (16, 8192)  # 16 KB
    assert variants.cluster_split(65536, "bfloat16", 8, variants.H100, cfg) == (8, 8192)
    assert variants.cluster_split(32768, "float32", 4, variants.H100, cfg) == (8, 4096)
    assert variants.cluster_split(262144, "bfloat16", 8, variants.H100, cfg) == (
        16,
        16384,
    )  # none reaches 16 KB
    assert variants.cluster_split(50257, "float32", 4, variants.H100, cfg)[0] == 16  # 201 KB
    assert variants.cluster_split(50257, "bfloat16", 8, variants.H100, cfg)[0] == 2  # 100 KB: up to 64 KB


@pytest.mark.parametrize("M,N", [*TARGETS, (64, 50257), (3, 40001)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_tune_candidates_start_with_autos_plan_and_each_holds_the_row(M, N, dtype):
    from kernels_cuda import tune

    cands = tune.candidates(M, N, dtype, variants.H100)
    assert cands[0].launch == variants.prepare((M, N), (N, 1), dtype, -1, "auto", variants.H100).launch
    assert len({c.launch for c in cands}) == len(cands) >= 2
    for c in cands:
        k = dict(c.launch.spec.constants)
        if c.launch.spec.kernel != "softmax_cluster" and N % variants.full_vec(dtype):
            assert k["VEC"] == 1, c.name  # 16-byte packs would be misaligned from the second row on
        if c.launch.spec.kernel == "softmax_fused":
            assert k["TPR"] * k["ITEMS"] * k["VEC"] >= N and k["ITEMS"] <= variants.fused_items_max(k["VEC"])
        elif c.launch.spec.kernel == "softmax_cluster":
            (chunk,) = c.launch.extra
            assert (
                chunk * k["CLUSTER"] >= N and c.launch.shared_mem <= variants.H100.max_shared_per_block - 1024
            )
