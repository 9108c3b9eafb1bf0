"""kernels_cuda.cross_entropy's compiled kernels and their plan (cuda/09_cross_entropy.cu), on the CPU.

Every kernel compiles with NVRTC for sm_90 (sm_80: test_cuda_codegen's sample) in every dtype
(fp64 included) with no spill and no local memory, reading the row and writing the gradient in
16-byte packs at every N; the plan (xent_config) holds every row and stays within the registers and
threads it may.
"""

from __future__ import annotations

import re

import pytest
from cuda_xent_helpers import DTYPES
from kernels_cuda import codegen, compiler
from kernels_cuda import row_kernels as rk

# sm_90 here; test_cuda_codegen compiles every specialization for sm_90 and a sample of each kernel
# (these among them) for sm_80
ARCHS = ("sm_90",)


@pytest.fixture(scope="module")
def compiled(offline_cache):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(codegen.CACHE_ENV, str(offline_cache))
        mp.setattr(compiler, "_compiled", {})
        specs = [rk.cross_entropy_spec("cross_entropy_scale", d, rk.scale_config(d)) for d in DTYPES]
        for dtype in DTYPES:
            for n in (600, 16384, 50257):  # rows sharing a block, a block's registers, rows in steps
                cfg = rk.xent_config(n, dtype)
                specs += [
                    rk.cross_entropy_spec("cross_entropy_forward", dtype, cfg, e) for e in (False, True)
                ]
                specs.append(rk.cross_entropy_spec("cross_entropy_backward", dtype, cfg))
        specs = list(dict.fromkeys(specs))
        assert set(specs) <= set(rk.specializations())
        yield codegen.compile_all(ARCHS, specs)


def test_every_kernel_compiles_in_every_dtype_without_spills_or_local_memory(compiled):
    kernels = ("cross_entropy_forward", "cross_entropy_backward", "cross_entropy_scale")
    assert {(r.spec.kernel, r.spec.dtype) for r in compiled} == {(k, d) for k in kernels for d in DTYPES}
    for r in compiled:
        assert r.resources is None or not (r.resources.spill_bytes or r.resources.stack_bytes), r.spec.name
        c = dict(r.spec.constants)
        assert r.resources is None or r.resources.registers * c["TPR"] * c["RPB"] <= 65536, r.spec.name
        ptx = r.ptx_path.read_text()
        assert ".local" not in ptx, r.spec.name
        if r.spec.kernel != "cross_entropy_scale":  # rows of any length: 16-byte packs in and out
            assert "st.global.v4.b32" in ptx, r.spec.name
            assert re.search(r"ld\.global[\w.]*\.v(4\.|2\.f64)", ptx), r.spec.name  # fp64: two a load


def test_xent_config_holds_every_row_and_depends_on_n_and_dtype_alone():
    """The cross-entropy's plan: short rows share blocks a warp or less a row, rows up to 256
    threads x 8 packs sit in registers, longer ones go in steps (a block a row); 16-byte packs at
    every N (odd ones included); every plan one the offline compile lists."""
    assert rk.xent_config(600, "float32") == rk.XentConfig(32, 2, 5, 4, False)
    assert rk.xent_config(600, "bfloat16") == rk.XentConfig(16, 4, 5, 8, False)
    assert rk.xent_config(1000, "bfloat16") == rk.XentConfig(32, 2, 4, 8, False)
    assert rk.xent_config(2048, "float32") == rk.XentConfig(64, 2, 8, 4, False)
    assert rk.xent_config(601, "bfloat16") == rk.xent_config(600, "bfloat16")
    assert rk.xent_config(16384, "bfloat16") == rk.XentConfig(256, 1, 8, 8, False)
    assert rk.xent_config(32000, "bfloat16") == rk.XentConfig(512, 1, 4, 8, True)
    assert rk.xent_config(50257, "bfloat16") == rk.XentConfig(512, 1, 4, 8, True)
    assert rk.xent_config(50257, "float32") == rk.XentConfig(1024, 1, 4, 4, True)  # one block an SM
    assert rk.xent_config(128256, "bfloat16") == rk.XentConfig(1024, 1, 4, 8, True)
    assert rk.xent_config(5, "float16") == rk.XentConfig(8, 8, 2, 8, False)
    assert rk.xent_config(4100, "float64").steps and rk.xent_config(4100, "float64").tpr == 256
    for dtype in DTYPES:
        vec = 16 // rk.ITEMSIZE[dtype]
        every = rk.every_xent_config(dtype)
        for n in [
            1,
            2,
            7,
            9,
            15,
            17,
            600,
            601,
            4095,
            4097,
            32000,
            32769,
            50257,
            65536,
            65537,
            128256,
            rk.MAX_N,
        ]:
            cfg = rk.xent_config(n, dtype)
            assert cfg in every and cfg.vec == vec, (n, dtype)
            assert cfg.steps or cfg.capacity() >= n // vec, (n, dtype)
            assert not cfg.steps or cfg.rpb == 1, (n, dtype)
            assert cfg.tpr >= 8 and 2 * (vec - 1) <= 2 * cfg.tpr, (n, dtype)  # head and tail: 2 a thread
            two_blocks = n * rk.ITEMSIZE[dtype] <= rk.XENT_TWO_BLOCKS_BYTES  # two rows an SM's shared memory
            assert cfg.threads <= (256 if dtype == "float64" else 512 if two_blocks else 1024), (n, dtype)
        # the smallest plan that holds the row: one fewer pack never takes a bigger plan
        sizes = [c.capacity() for c in every if not c.steps]
        assert sizes == sorted(sizes)
    # packs past the first step, staged as far as shared memory goes
    cfg = rk.xent_config(50257, "bfloat16")
    assert rk.xent_staged_packs(50257, "bfloat16", cfg, 227 * 1024) == 50257 // 8
    cfg = rk.xent_config(256000, "bfloat16")
    assert rk.xent_staged_packs(256000, "bfloat16", cfg, 227 * 1024) == (227 * 1024 - rk.STAGE_RESERVE) // 16
    assert rk.xent_staged_packs(600, "float32", rk.xent_config(600, "float32"), 227 * 1024) == 0
