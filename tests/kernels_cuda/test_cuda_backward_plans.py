"""kernels_cuda.softmax_backward's plans (CPU): every backward plan is a specialization within its
kernel's limits (the auto ladder on the target shapes, few fp32 rows, cluster chunks that fit
shared memory, odd rows with shared offsets: one plan for every M), and every backward Spec
compiles with NVRTC offline for sm_90 (and a sample for sm_80) with no spills.
"""

from __future__ import annotations

import math

import pytest
from cuda_plan_helpers import DEVICES, any_plan, packs_and_offsets
from hypothesis import given, settings
from hypothesis import strategies as st
from kernels_cuda import arrays, codegen
from kernels_cuda import backward_plans as bw
from kernels_cuda import launch_types as lt
from kernels_cuda import softmax_variants as sm
from offline_sample import sm80_sample

BACKWARD_SPECS = set(bw.specializations())


@any_plan(bw.VARIANTS)
def test_every_backward_plan_is_a_compiled_specialization_within_its_limits(
    M, N, dtype, aligned, device, variant, same_offsets, invariant
):
    vec, same_offsets = packs_and_offsets(dtype, N, aligned, same_offsets)
    dev = DEVICES[device]
    if variant == "fused" and N > bw.fused_capacity(vec):
        with pytest.raises(ValueError, match="fused kernel holds rows of at most"):
            bw.plan(variant, M, N, dtype, vec, dev, None, same_offsets, invariant)
        return
    launch = bw.plan(variant, M, N, dtype, vec, dev, None, same_offsets, invariant)
    spec, c = launch.spec, dict(launch.spec.constants)
    assert spec in BACKWARD_SPECS and spec.dtype == dtype and spec.min_cc <= dev.cc
    assert 1 <= launch.block <= 1024 and 1 <= launch.grid <= sm.MAX_GRID
    size = arrays.ITEMSIZE[dtype]
    if spec.kernel == "softmax_backward_fused":
        assert c["VEC"] == vec and c["TPR"] * c["ITEMS"] * vec >= N and c["ITEMS"] <= bw.FUSED_ITEMS_MAX
        assert launch.block == c["TPR"] * c["RPB"] and launch.grid * c["RPB"] >= min(M, sm.MAX_GRID)
    elif spec.kernel == "softmax_backward_cluster":
        (chunk,) = launch.extra
        assert (vec == sm.full_vec(dtype) or same_offsets) and dict(spec.constants)["VEC"] == sm.full_vec(
            dtype
        )
        assert chunk % sm.full_vec(dtype) == 0 and spec.cluster * chunk >= N
        assert 2 * chunk * size <= dev.max_shared_per_block - 1024
        if c["DY_PACKS"]:  # dy in registers: y's chunk alone in shared memory, two blocks an SM
            assert chunk // c["VEC"] <= c["THREADS"] * c["DY_PACKS"] and launch.shared_mem == chunk * size
            assert 2 * chunk * size > dev.max_shared_per_block // 2 and spec.cluster >= 16
        else:
            assert launch.shared_mem == 2 * chunk * size
        assert launch.grid % spec.cluster == 0
    else:
        assert spec.kernel == "softmax_backward_twopass" and c["VEC"] == vec and launch.shared_mem == 0
    if variant == "auto" and dev.cc >= 90 and same_offsets and N * size > bw.AUTO.fused_max_row_bytes:
        if 2 * math.ceil(N / 16) * size <= dev.max_shared_per_block - 1024:
            assert spec.kernel == "softmax_backward_cluster"


@pytest.mark.parametrize(
    "M,N,dtype,kernel,cluster,dy_packs",
    [
        (4096, 600, "float32", "softmax_backward_fused", 0, None),
        (65536, 600, "bfloat16", "softmax_backward_fused", 0, None),
        (1024, 8192, "float32", "softmax_backward_fused", 0, None),
        (1024, 131072, "float32", "softmax_backward_cluster", 8, 0),  # 64 KB chunks: one block an SM
        (128, 131072, "float32", "softmax_backward_cluster", 8, 0),  # batch-invariant: as 1024 rows
        (16, 131072, "float32", "softmax_backward_cluster", 8, 0),
        (16, 65536, "float32", "softmax_backward_cluster", 8, 0),  # 8-block chunks share an SM
        (1024, 131072, "bfloat16", "softmax_backward_cluster", 8, 0),
        (256, 262144, "float32", "softmax_backward_cluster", 16, bw.CLUSTER_DY_PACKS),  # 128 KB in 8
        (256, 262144, "bfloat16", "softmax_backward_cluster", 16, 0),  # not one 16-bit block an SM
        (4096, 32768, "float32", "softmax_backward_cluster", 8, 0),
        (4096, 32768, "bfloat16", "softmax_backward_cluster", 8, 0),
        (8192, 16384, "float32", "softmax_backward_cluster", 8, 0),
    ],
)
def test_auto_backward_on_the_target_shapes(M, N, dtype, kernel, cluster, dy_packs):
    launch = bw.plan("auto", M, N, dtype, sm.full_vec(dtype), sm.H100)
    assert launch.spec == bw.plan("auto", 1, N, dtype, sm.full_vec(dtype), sm.H100).spec  # whatever M
    assert launch.spec.kernel == kernel and launch.spec.cluster == cluster
    assert dict(launch.spec.constants).get("DY_PACKS") == dy_packs
    # without clusters: registers while the row fits, else two passes
    a100 = bw.plan("auto", M, N, dtype, sm.full_vec(dtype), sm.A100).spec.kernel
    fits = N <= bw.fused_capacity(sm.full_vec(dtype))
    assert a100 == ("softmax_backward_fused" if fits else "softmax_backward_twopass")


@pytest.mark.parametrize(
    "M,N,tpr,items",
    [
        (4096, 600, 32, 5),  # 150 packs: a warp of 5 each (FEW_ROWS_ITEMS_MAX)
        (4096, 1024, 64, 4),
        (2048, 2048, 128, 4),
        (16384, 600, 128, 2),
        (1024, 600, 128, 2),
    ],
)
def test_fp32_fused_backward_of_few_rows_gives_a_row_fewer_threads(M, N, tpr, items):
    """With batch_invariant=False only; by default every M takes the ladder's launch."""
    launch = bw.plan("auto", M, N, "float32", 4, sm.H100, batch_invariant=False)
    assert (
        bw.plan("auto", M, N, "float32", 4, sm.H100).spec
        == bw.plan("auto", 1 << 20, N, "float32", 4, sm.H100).spec
    )
    c = dict(launch.spec.constants)
    assert (c["TPR"], c["ITEMS"]) == (tpr, items) and launch.spec in set(bw.specializations())
    assert c.get("FULL", 0) * tpr <= N // 4  # packs 0..FULL-1 of every thread lie inside the row
    ladder = bw.plan(
        "auto", M, N, "float32", 4, sm.H100, bw.BackwardConfig(few_rows_per_sm=0), batch_invariant=False
    )
    if dict(ladder.spec.constants)["TPR"] > tpr:  # fewer threads a row, in 128-thread blocks
        assert launch.block == sm.FEW_ROWS_BLOCK and launch.grid * c["RPB"] >= M
    else:
        assert launch == ladder


@settings(max_examples=300)  # plain Python, a millisecond an example
@given(
    N=st.integers(4096, 1 << 20),
    dtype=st.sampled_from(sm.DTYPES),
    cluster_size=st.sampled_from(sm.CLUSTER_SIZES),
    max_cluster=st.sampled_from(sm.CLUSTER_SIZES),
    dy_in_registers=st.booleans(),
)
def test_a_cluster_launch_fits_shared_memory_whatever_the_configured_chunk(
    N, dtype, cluster_size, max_cluster, dy_in_registers
):
    """Whatever cluster size is asked for, the plan's blocks fit their shared memory (or there is
    no cluster launch)."""
    cfg = bw.BackwardConfig(
        cluster_size=cluster_size, max_cluster=max_cluster, cluster_dy_in_registers=dy_in_registers
    )
    vec = sm.full_vec(dtype)
    launch = bw.plan_cluster(N - N % vec, dtype, vec, sm.H100, cfg)
    if launch is not None:
        c, (chunk,) = dict(launch.spec.constants), launch.extra
        assert launch.shared_mem <= sm.H100.max_shared_per_block - 1024
        assert launch.spec.cluster * chunk >= N - N % vec
        assert launch.shared_mem == (1 if c["DY_PACKS"] else 2) * chunk * arrays.ITEMSIZE[dtype]


def test_long_odd_rows_take_the_cluster_kernel_where_y_dy_and_dx_share_offsets():
    """64 rows of 50257 (a GPT-2 vocabulary): not whole 16-byte packs, but fresh y, dy and dx
    share each row's offset, so the cluster kernel takes them instead of one block a row, with or
    without batch invariance (the cluster's split follows the row's own address, not M); rows
    whose offsets differ between the arrays take two passes."""
    for dtype, cluster in (("float32", 8), ("bfloat16", 8)):
        for invariant in (True, False):
            launch = bw.plan("auto", 64, 50257, dtype, 1, sm.H100, None, True, batch_invariant=invariant)
            assert launch.spec.kernel == "softmax_backward_cluster" and launch.spec.cluster == cluster
            assert launch.grid == 64 * cluster
        assert bw.plan("auto", 64, 50257, dtype, 1, sm.H100).spec.kernel == "softmax_backward_twopass"
        assert (
            bw.plan("auto", 64, 50257, dtype, 1, sm.A100, None, True).spec.kernel
            == "softmax_backward_twopass"
        )


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("N", [50257, 40001, 16385, 131071])
def test_odd_rows_with_shared_offsets_get_one_cluster_plan_for_every_row_count(N, dtype):
    """Batch invariance for rows that are not whole packs: the invariant plan is the same for
    every M, and it is the cluster kernel wherever the row is long enough to want one."""
    plans = [bw.plan("auto", M, N, dtype, 1, sm.H100, None, True) for M in (1, 2, 7, 64, 512, 4096, 100_000)]
    for launch in plans:
        assert launch.spec == plans[0].spec and launch.block == plans[0].block
        assert launch.shared_mem == plans[0].shared_mem and launch.extra == plans[0].extra
        assert lt.reduction_order(launch) == lt.reduction_order(plans[0])
    if N * arrays.ITEMSIZE[dtype] > bw.AUTO.fused_max_row_bytes:
        assert plans[0].spec.kernel == "softmax_backward_cluster"
    rows = bw.row_plan("auto", N, dtype, 1, sm.H100, bw.AUTO, True)
    assert all(launch == rows.launch(M) for launch, M in zip(plans, (1, 2, 7, 64, 512, 4096, 100_000)))


def test_every_backward_spec_compiles_offline_without_spills(offline_cache, monkeypatch):
    monkeypatch.setenv(codegen.CACHE_ENV, str(offline_cache))
    specs = sorted(BACKWARD_SPECS, key=lambda s: s.name)
    sample = sm80_sample(
        specs
    )  # (every spec for sm_80: python -m kernels_cuda.codegen --offline --arch sm_80)
    results = codegen.compile_all(["sm_90"], specs=specs) + codegen.compile_all(["sm_80"], specs=sample)
    assert {(r.spec, r.arch) for r in results} == {(s, "sm_90") for s in specs} | {
        (s, "sm_80") for s in sample
    }
    for r in results:
        assert r.resources.spill_bytes == 0 and r.resources.stack_bytes == 0, r.spec.name
        if r.spec.kernel == "softmax_backward_cluster" and not dict(r.spec.constants)["DY_PACKS"]:
            # four blocks an SM, as their shared memory allows
            assert r.resources.registers <= 64, r.spec.name
        ptx = r.ptx_path.read_text()
        c = dict(r.spec.constants)
        loads = "cp.async.bulk.shared::cluster.global" if r.spec.cluster else "ld.global.nc.v4"
        if c.get("STAGED"):  # 16-byte copies into shared memory, no register loads from global
            loads = "cp.async.ca.shared.global"
            assert "ld.global" not in ptx, r.spec.name
        if c.get("VEC", 1) > 1:  # 16-byte stores; 16-byte loads, copies or bulk copies
            assert "st.global.v4" in ptx and loads in ptx, r.spec.name
