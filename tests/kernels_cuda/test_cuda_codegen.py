"""The codegen core without a GPU: every specialization compiles for sm_90 through NVRTC, and a
fixed sample of them for sm_80 (offline_sample.sm80_sample: every source and kernel,
at a fraction of CI's time; `python -m kernels_cuda.codegen --offline --arch sm_80` compiles them
all), ptxas reports no spills, the PTX has the accesses the kernels were designed around, the disk
cache is reused and keyed by what changes the binary, the resource report reads ptxas, and the
kernel modules register their specializations. That the disk cache verifies what it serves
(damaged or forged entries, two processes filling one cache) is in test_cuda_codegen_cache.py."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest
from kernels_cuda import arrays, codegen, codegen_types, compiler, registry
from kernels_cuda import softmax_variants as variants
from kernels_cuda.codegen import CompileError, Spec
from offline_sample import sm80_sample


@pytest.fixture(scope="module")
def cache(offline_cache):
    """The session's offline disk cache (conftest.py), empty at its start: a spec no other file
    compiled first is a real NVRTC compile here."""
    with pytest.MonkeyPatch.context() as mp:
        folder = offline_cache
        mp.setenv(codegen.CACHE_ENV, str(folder))
        mp.setattr(compiler, "_compiled", {})
        yield folder


@pytest.fixture(scope="module")
def offline(cache):
    """Every specialization for sm_90 and the sm_80 sample, compiled once (in parallel) for this module."""
    return codegen.compile_all(("sm_90",)) + codegen.compile_all(("sm_80",), sm80_sample(codegen.all_specs()))


def test_every_specialization_compiles_for_each_architecture_it_supports(offline, cache):
    specs = codegen.all_specs()
    expected = {(s, "sm_90") for s in specs} | {(s, "sm_80") for s in sm80_sample(specs)}
    assert {(r.spec, r.arch) for r in offline} == expected
    # the sample holds every kernel in every dtype sm_80 takes
    assert {(s.kernel, s.dtype) for s, a in expected if a == "sm_80"} == {
        (s.kernel, s.dtype) for s in specs if s.supports_arch("sm_80")
    }
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


def test_a_build_holds_the_one_entry_point_its_spec_names(offline):
    """Every build's PTX has its spec's kernel as its only entry (KL_ENTRY_<kernel>: 08, 09 and 10 hold
    several and compile the one named; 06 picks its one by its constants)."""
    for r in offline:
        entries = re.findall(r"\.entry\s+(\w+)", r.ptx_path.read_text())
        assert entries == [r.spec.kernel], (r.spec.name, r.arch, entries)


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
            r"\b(ld\.[\w.:]+|st\.[\w.:]+|mapa[\w.:]*|barrier\.cluster[\w.]*|mbarrier\.[\w.:]+)",
            result.ptx_path.read_text(),
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
            wide = {op for op in global_ops if ".v4." in op}
            narrow = global_ops - wide
            if r.spec.cluster:  # the body is written in 16-byte packs; the head and tail one element each
                bits = str(8 * arrays.ITEMSIZE[r.spec.dtype])
                assert "st.global.v4.b32" in wide, (r.spec.name, global_ops)
                assert all(op.endswith(bits) and ".v" not in op for op in narrow), (r.spec.name, narrow)
            else:
                assert wide and not narrow, (r.spec.name, global_ops)


def test_cluster_kernels_exchange_a_row_without_a_release_barrier(offline):
    """Each block pushes its partial into every block's shared memory (st.async, counted on the
    receiver's mbarrier, awaited with acquire at cluster scope). No cluster barrier with release
    semantics: its GPU-scope fence would wait for the block's stores to global memory every row."""
    clusters = [r for r in offline if r.spec.cluster]
    assert {r.spec.kernel for r in clusters} == {
        "softmax_cluster",
        "softmax_backward_cluster",
        "cross_entropy_cluster_forward",
    }
    for r in clusters:
        ops = _ptx_ops(r)
        assert "mapa.shared::cluster.u32" in ops, r.spec.name
        assert any(op.startswith("st.async.shared::cluster.mbarrier::complete_tx::bytes") for op in ops), (
            r.spec.name
        )
        assert "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64" in ops, r.spec.name
        assert not any(op.startswith("barrier.cluster.arrive.release") for op in ops), (r.spec.name, ops)
        assert not any(op.startswith("ld.shared::cluster") for op in ops), (r.spec.name, ops)


def test_cluster_forward_copies_its_chunk_to_shared_memory_from_every_thread(offline):
    """04 reads its chunk with cp.async, 16 bytes an instruction from every thread (all in flight
    at once, through no register), not with one bulk copy from one thread; held in registers
    (ITEMS > 0), with 16-byte loads and no copy into shared memory."""
    forward = [r for r in offline if r.spec.kernel == "softmax_cluster"]
    assert any(dict(r.spec.constants)["ITEMS"] for r in forward)
    for r in forward:
        ptx = r.ptx_path.read_text()
        assert "cp.async.bulk" not in ptx, r.spec.name
        if dict(r.spec.constants)["ITEMS"]:
            assert "cp.async" not in ptx and "ld.global.nc.v4" in ptx, r.spec.name
            assert r.resources.spill_store_bytes == 0, r.spec.name
        else:
            assert "cp.async.cg.shared.global" in ptx, r.spec.name


def test_disk_cache_is_reused_and_keyed_by_everything_that_changes_the_binary(offline, cache):
    spec = variants.online_spec("float16", 8)
    first = codegen.compile_spec(spec, "sm_90")
    compiler._compiled.clear()  # a new process: only the disk cache is left
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


def test_without_cupy_the_error_is_one_line_naming_the_extras(monkeypatch):
    for name in (
        "cupy_backends",
        "cupy_backends.cuda",
        "cupy_backends.cuda.libs",
        "cupy_backends.cuda.libs.nvrtc",
    ):
        monkeypatch.setitem(sys.modules, name, None)
    compiler._nvrtc.cache_clear()
    try:
        with pytest.raises(ImportError) as info:
            codegen.nvrtc_version()
    finally:
        compiler._nvrtc.cache_clear()
    message = str(info.value)
    assert "\n" not in message and "kernel-lab-kernels-cuda[cuda13]" in message and "[cuda12]" in message


# --- registration and progress --------------------------------------------------------------


def test_kernel_modules_register_their_specializations_and_the_core_names_none_of_them():
    for core in (codegen, codegen_types, compiler, registry):
        source = Path(core.__file__).read_text()
        assert "kernels_cuda.vecadd" not in source and "softmax_variants" not in source, core.__name__
    extra = Spec("00_vector_add.cu", "vector_add", "float16", (("UNUSED", 1),))

    def provider():
        return [extra]

    codegen.register_specializations(provider)
    try:
        specs = codegen.all_specs()
    finally:
        del registry._providers[f"{provider.__module__}.{provider.__qualname__}"]
    assert extra in specs and set(variants.specializations()) <= set(specs)
    assert extra not in codegen.all_specs()


def test_compile_all_prints_progress_lines_while_it_works(monkeypatch, capsys):
    def slow(spec, arch):
        time.sleep(0.03)
        return spec

    monkeypatch.setattr(codegen, "compile_spec", slow)
    specs = [Spec("00_vector_add.cu", "vector_add", "float32", (("I", i),)) for i in range(40)]
    assert codegen.compile_all(["sm_90"], specs, jobs=1, progress=0.2) == specs
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) >= 3, lines  # ~1.2 s of work: a line at least every 0.2 s, and the last
    pattern = re.compile(r"compiling specializations: (\d+)/40, \d+ s elapsed, ETA (\d+ s|\?)")
    counts = [int(pattern.fullmatch(line)[1]) for line in lines]
    assert counts == sorted(counts) and counts[-1] == 40
