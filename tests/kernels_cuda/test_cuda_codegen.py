"""The codegen core without a GPU: every specialization compiles for sm_80 and sm_90 through NVRTC,
ptxas reports no spills, the PTX has the accesses the kernels were designed around, and the
cache and resource report behave."""

from __future__ import annotations

import re

import pytest
from kernels_cuda import codegen
from kernels_cuda import softmax_variants as variants
from kernels_cuda.codegen import CompileError, Spec

ARCHS = ("sm_80", "sm_90")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A fresh disk cache for this module: the first compile is a real NVRTC compile."""
    with pytest.MonkeyPatch.context() as mp:
        folder = tmp_path_factory.mktemp("kernels-cuda-cache")
        mp.setenv(codegen.CACHE_ENV, str(folder))
        mp.setattr(codegen, "_compiled", {})
        yield folder


@pytest.fixture(scope="module")
def offline(cache):
    """Every specialization for both architectures, compiled once (in parallel) for this module."""
    return codegen.compile_all(ARCHS)


def test_every_specialization_compiles_for_each_architecture_it_supports(offline, cache):
    specs = codegen.all_specs()
    expected = {(s, a) for s in specs for a in ARCHS if s.supports_arch(a)}
    assert {(r.spec, r.arch) for r in offline} == expected
    assert len(expected) > 150  # v3 alone: ~85 (dtype x pack width x threads-per-row ladder) per arch
    for r in offline:
        assert r.cubin_path.parent == cache
        assert r.cubin_path.read_bytes()[:4] == b"\x7fELF", r.spec.name
        assert f".target {r.arch}" in r.ptx_path.read_text()
    # cluster kernels exist only for sm_90: __cluster_dims__ does not compile for sm_80
    clusters = {r.spec for r in offline if r.spec.cluster}
    assert clusters and all(r.arch == "sm_90" for r in offline if r.spec.cluster)
    with pytest.raises(ValueError, match="needs sm_90"):
        codegen.compile_spec(next(iter(clusters)), "sm_80")


def test_no_specialization_spills_or_uses_a_stack(offline):
    bad = [
        (r.spec.name, r.arch, r.resources)
        for r in offline
        if r.resources.spill_bytes or r.resources.stack_bytes
    ]
    assert not bad


def test_registers_allow_the_block_size_each_specialization_launches_with(offline):
    for r in offline:
        c = dict(r.spec.constants)
        threads = c.get("THREADS") or c.get("BLOCK") or (c["TPR"] * c["RPB"] if "TPR" in c else 256)
        assert r.resources.registers * threads <= 65536, (r.spec.name, r.arch, r.resources.registers)


def _ptx_ops(result) -> set[str]:
    return set(
        re.findall(
            r"\b(ld\.[\w.:]+|st\.[\w.:]+|mapa[\w.:]*|barrier\.cluster[\w.]*)", result.ptx_path.read_text()
        )
    )


def test_full_width_kernels_move_16_bytes_per_access_and_never_touch_local_memory(offline):
    for r in offline:
        if r.spec.kernel not in ("softmax_fused", "softmax_cluster", "softmax_online"):
            continue
        ops = _ptx_ops(r)
        assert not any(".local" in op for op in ops), (r.spec.name, ops)
        global_ops = {op for op in ops if ".global" in op}
        if dict(r.spec.constants)["VEC"] == variants.full_vec(r.spec.dtype):
            assert global_ops and all(".v4." in op for op in global_ops), (r.spec.name, global_ops)
        if r.spec.cluster:
            assert {
                "mapa.shared::cluster.u32",
                "barrier.cluster.arrive.release.aligned",
                "barrier.cluster.wait.acquire.aligned",
            } <= ops, r.spec.name
            assert any(op.startswith("ld.shared::cluster") for op in ops), r.spec.name


def test_disk_cache_is_reused_and_keyed_by_everything_that_changes_the_binary(offline, cache):
    spec = variants.online_spec("float16", 8)
    first = codegen.compile_spec(spec, "sm_90")
    codegen._compiled.clear()  # a new process: only the disk cache is left
    again = codegen.compile_spec(spec, "sm_90")
    assert again.from_cache and again.seconds == 0.0
    assert again.cubin_path == first.cubin_path and again.resources == first.resources
    keys = {
        codegen.cache_key(spec, "sm_90"),
        codegen.cache_key(spec, "sm_80"),
        codegen.cache_key(variants.online_spec("bfloat16", 8), "sm_90"),
        codegen.cache_key(variants.online_spec("float16", 1), "sm_90"),
    }
    assert len(keys) == 4


def test_cache_folder_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(codegen.CACHE_ENV, str(tmp_path / "here"))
    assert codegen.cache_dir() == tmp_path / "here"
    monkeypatch.delenv(codegen.CACHE_ENV)
    assert codegen.cache_dir().parts[-2:] == (".cache", "kernels-cuda")


def test_compile_errors_carry_the_nvrtc_log(cache):
    broken = Spec("03_softmax_fused.cu", "softmax_fused", "float32", (("TPR", 32),))  # RPB etc. undefined
    with pytest.raises(CompileError, match="KL_RPB"):
        codegen.compile_spec(broken, "sm_90")
    with pytest.raises(FileNotFoundError):
        codegen.compile_spec(Spec("99_missing.cu", "k", "float32"), "sm_90")
    with pytest.raises(ValueError, match="architecture"):
        codegen.compile_spec(variants.online_spec("float32", 4), "compute_90")


def test_parse_resources_reads_ptxas_reports():
    log = """ptxas info    : 28 bytes gmem
ptxas info    : Compiling entry function 'a' for 'sm_90'
ptxas info    : Function properties for a
ptxas         .     8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 64 registers, used 1 barriers, 8 bytes cumulative stack size, 64 bytes smem
ptxas info    : Compiling entry function 'b' for 'sm_90'
ptxas info    : Function properties for b
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 13 registers
"""
    a = codegen.parse_resources(log, "a")
    assert (a.registers, a.barriers, a.shared_bytes, a.stack_bytes, a.spill_bytes) == (64, 1, 64, 8, 16)
    b = codegen.parse_resources(log, "b")
    assert (b.registers, b.barriers, b.shared_bytes, b.spill_bytes) == (13, 0, 0, 0)
    with pytest.raises(ValueError, match="no ptxas report"):
        codegen.parse_resources(log, "c")


def test_offline_command_prints_the_resource_table(offline, capsys):
    assert codegen.main(["--offline", "--arch", "sm_90"]) == 0
    out = capsys.readouterr().out
    assert "spill st B" in out and "softmax_cluster.bf16[CLUSTER=16" in out and "vector_add.f32" in out
    assert re.search(r"\d+ specializations for sm_90 with NVRTC \d+\.\d+ .*; 0 spill", out)
