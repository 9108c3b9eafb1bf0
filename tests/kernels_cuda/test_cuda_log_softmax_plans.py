"""kernels_cuda.log_softmax's plans and compiled kernels (cuda/10_log_softmax.cu, and the softmax's
kernels with a log epilogue), on CPU: the row configuration depends on (N, dtype) only and every one
is a compiled specialization; the kernels compile with NVRTC for sm_90 (sm_80: test_cuda_codegen's
sample) in every dtype (fp64 included) with no spill, no local memory, and 16-byte global accesses
where the row is whole packs; with launches recorded, the routes: rows past a block of whole packs
over a cluster on sm_90, rows the softmax holds in registers on its kernels; the plans leave the
softmax's picks record alone. The op itself: test_cuda_log_softmax.py.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kernels_cuda import codegen, compiler
from kernels_cuda import log_softmax_op as ls
from kernels_cuda import row_kernels as rk

# sm_90 here; test_cuda_codegen compiles every specialization for sm_90 and a sample of each kernel
# (these among them) for sm_80
ARCHS = ("sm_90",)
KERNELS = ("log_softmax_forward", "log_softmax_backward")


@given(N=st.integers(1, 10**6), dtype=st.sampled_from(sorted(rk.DTYPES)))
def test_row_config_depends_on_n_and_dtype_only_and_is_compiled(N, dtype):
    cfg = rk.row_config(N, dtype)
    assert N % cfg.vec == 0 and cfg.vec * rk.ITEMSIZE[dtype] in (16, rk.ITEMSIZE[dtype])
    assert cfg.threads % 32 == 0 and cfg.threads <= 1024
    assert cfg in rk.every_row_config(dtype)
    for kernel in KERNELS:
        assert rk.log_softmax_spec(kernel, dtype, cfg) in rk.specializations()
    staged = rk.staged_packs(N, dtype, cfg, 227 * 1024)
    assert 0 <= staged <= N // cfg.vec
    assert staged * cfg.vec * rk.ITEMSIZE[dtype] <= 227 * 1024 - rk.STAGE_RESERVE


def test_stage_limit_caps_the_staged_packs_and_rejects_negative_sizes(monkeypatch):
    monkeypatch.setattr(rk, "max_shared", lambda device_id: 227 * 1024)
    monkeypatch.setattr(rk, "STAGE_LIMIT", None)
    cfg = rk.row_config(128256, "bfloat16")
    assert rk.staged_packs(128256, "bfloat16", cfg, rk.stage_room(0)) == (227 * 1024 - rk.STAGE_RESERVE) // 16
    rk.set_stage_limit(4096)
    assert rk.staged_packs(128256, "bfloat16", cfg, rk.stage_room(0)) == 4096 // 16
    rk.set_stage_limit(0)
    assert rk.staged_packs(128256, "bfloat16", cfg, rk.stage_room(0)) == 0
    with pytest.raises(ValueError, match="nbytes") as info:
        rk.set_stage_limit(-1)
    assert "\n" not in str(info.value)


@pytest.fixture(scope="module")
def compiled(offline_cache):
    """One full-pack and one element-wide specialization of each kernel and dtype, both archs."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(codegen.CACHE_ENV, str(offline_cache))
        mp.setattr(compiler, "_compiled", {})
        specs = [
            rk.log_softmax_spec(k, dtype, rk.row_config(n, dtype))
            for dtype in rk.DTYPES
            for n in (50_000 * 8, 50_257)  # whole 16-byte packs at 1024 (256 fp64) threads; odd
            for k in KERNELS
        ]
        yield codegen.compile_all(ARCHS, specs)


def test_every_kernel_compiles_in_every_dtype_without_spills_or_local_memory(compiled):
    assert {(r.spec.kernel, r.spec.dtype) for r in compiled} == {(k, d) for k in KERNELS for d in rk.DTYPES}
    for r in compiled:
        assert r.cubin_path.read_bytes()[:4] == b"\x7fELF", r.spec.name
        assert r.resources is None or not (r.resources.spill_bytes or r.resources.stack_bytes), r.spec.name
        threads = dict(r.spec.constants)["THREADS"]
        assert r.resources is None or r.resources.registers * threads <= 65536, r.spec.name
        ptx = r.ptx_path.read_text()
        assert ".local" not in ptx, r.spec.name
        global_ops = set(re.findall(r"\b(?:ld|st)\.global[\w.]*", ptx))
        if dict(r.spec.constants)["VEC"] > 1:  # every access of a row is one 16-byte pack
            assert global_ops and all(
                ".v4." in op or ".v2.f64" in op for op in global_ops if "u64" not in op
            ), (
                r.spec.name,
                global_ops,
            )


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_rows_past_a_block_of_whole_packs_take_the_cluster_kernels_on_sm90(dtype):
    """From (N, dtype, vec, device) alone: rows of whole 16-byte packs past what one block stages
    go over a cluster (04 forward, 07 backward, each with LOG=1, every launch's spec compiled
    offline), and so do odd rows whose arrays share their offsets where the softmax's cluster runs;
    rows that fit, short or misaligned odd rows, fp64 and devices without clusters stay on 10."""
    from kernels_cuda.launch_types import H100, full_vec

    size, vec = rk.ITEMSIZE[dtype], full_vec(dtype)
    fits = (H100.max_shared_per_block - rk.STAGE_RESERVE) // size // vec * vec
    offline = set(codegen.all_specs())
    for N in (fits + vec, 2 * fits, 262144):
        for direction, kernel in (("fwd", "softmax_cluster"), ("bwd", "softmax_backward_cluster")):
            plan = ls.cluster_plan(direction, N, dtype, vec, H100)
            constants = dict(plan.spec.constants)
            assert plan.spec.kernel == kernel and constants["LOG"] == 1, (N, direction, plan)
            assert (
                constants.get("ITEMS", 0) == 0 and constants.get("DY_PACKS", 0) == 0
            )  # x, dy in shared memory
            assert plan.group == constants["CLUSTER"] and plan.extra[0] * plan.group >= N
            assert plan.spec in offline, plan.spec.name
            assert ls.cluster_plan(direction, N, dtype, 1, H100) is None  # odd rows: 10
            assert ls.cluster_plan(direction, N, dtype, vec, replace(H100, cc=80)) is None
        assert ls.cluster_plan("fwd", fits, dtype, vec, H100) is None  # staged whole: 10
    for direction in ("fwd", "bwd"):  # odd rows whose arrays share offsets: where the softmax's cluster runs
        odd = ls.cluster_plan(direction, 50257, dtype, 1, H100, same_offsets=True)
        assert dict(odd.spec.constants)["LOG"] == 1 and odd.spec in offline, direction
        assert ls.cluster_plan(direction, 601, dtype, 1, H100, same_offsets=True) is None  # short: 10
    assert ls.cluster_plan("fwd", 262144, "float64", 2, H100) is None


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_rows_the_softmax_holds_in_registers_take_its_kernels_with_the_log_epilogue(dtype):
    """From (N, dtype, vec, device) alone: rows of whole 16-byte packs for which the softmax's auto
    plan (a card's picks, or the rule) is 03 / 06's fused kernel run that plan with LOG=1, planned
    for every row count, every launch's spec compiled offline, on any device; odd rows, fp64 and
    rows the softmax takes elsewhere do not."""
    from kernels_cuda import backward_plans, fused_plans, softmax_plans
    from kernels_cuda.launch_types import H100, full_vec

    size, vec = rk.ITEMSIZE[dtype], full_vec(dtype)
    offline = set(codegen.all_specs())
    h200 = replace(H100, name="NVIDIA H200", bandwidth=4.8e12)  # a card with committed picks
    longest = softmax_plans.AUTO.fused_max_row_bytes // size
    for device in (H100, h200, replace(H100, cc=80, name="")):
        for N in (vec, 600 // vec * vec, 1024, 4096, 8192, longest):
            for direction, plans, kernel in (
                ("fwd", softmax_plans, "softmax_fused"),
                ("bwd", backward_plans, "softmax_backward_fused"),
            ):
                plan = ls.registers_plan(direction, N, dtype, vec, device)
                softmax = plans.row_plan("auto", N, dtype, vec, device)
                assert softmax.spec.kernel == kernel, (N, direction, softmax)  # held in registers
                assert plan.spec == fused_plans.with_log(softmax.spec) and plan.block == softmax.block
                assert dict(plan.spec.constants)["LOG"] == 1 and plan.spec in offline, plan.spec.name
                assert ls.registers_plan(direction, N, dtype, 1, device) is None  # odd rows
        for direction in ("fwd", "bwd"):  # the softmax's cluster on sm_90
            assert ls.registers_plan(direction, 4 * longest, dtype, vec, H100) is None
    assert ls.registers_plan("fwd", 600, "float64", 2, H100) is None


def test_the_log_softmax_plans_leave_the_softmax_picks_record_alone():
    """registers_plan and cluster_plan ask which kernel the softmax's auto plan runs without noting
    it in picks.USED, the record of the softmax's own plans that its run manifests carry."""
    from kernels_cuda import picks
    from kernels_cuda.launch_types import H100

    picks.USED.clear()
    ls.registers_plan.cache_clear()
    ls.cluster_plan.cache_clear()
    for direction in ("fwd", "bwd"):
        assert ls.registers_plan(direction, 1024, "bfloat16", 8, H100) is not None
        assert ls.cluster_plan(direction, 50257, "bfloat16", 1, H100, same_offsets=True) is not None
    assert picks.USED == {}
