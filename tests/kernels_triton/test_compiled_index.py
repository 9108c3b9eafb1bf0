"""The index from a launch's specialization to Triton's compiled kernel (compiled_index.py).

On the CPU: a subprocess without the interpreter compiles the forward kernel for an sm_90
target (Triton compiles without a GPU), records it, and loads it back: the same kernel,
and nothing served once a file, the key or the entry no longer matches. On the GPU: a
second process launches a kernel the first compiled without calling Triton's installation
hash, whose absence from the call path is the point of the index: the one-program-a-row
kernels and the split-row kernels (split_row.py keeps its own compiled kernels).
"""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

ROUND_TRIP = textwrap.dedent(
    """
    import json, os, sys
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from kernels_triton import compiled_index
    from kernels_triton.kernels import KERNELS

    kernel = KERNELS["softmax_fwd"]
    names = kernel.arg_names
    signature = {a: "constexpr" for a in names}
    signature.update({"x_ptr": "*fp32", "y_ptr": "*fp32", "x_row_stride": "i32", "y_row_stride": "constexpr",
                      "M": "i32", "N": "i32"})
    meta = {"BLOCK": 1024, "BLOCK_N": 1024, "ROWS": 1, "ONE_PASS": True, "NEEDS_MASK": True, "ALIGN": 4,
            "L2_HINTS": False, "PACKS": 0, "FULL": 0}
    constants = {(names.index(a),): v for a, v in meta.items()}
    constants[(names.index("y_row_stride"),)] = 1
    src = ASTSource(kernel, signature, constexprs=constants, attrs={(0,): [["tt.divisibility", 16]]})
    compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    spec = ("softmax_fwd", 1000, (1000, 1), "float32", (True, False), True, tuple(meta.values()), 4)
    key = compiled_index.key(kernel, spec, (9, 0))
    assert key and key == compiled_index.key(kernel, spec, (9, 0))
    assert compiled_index.key(kernel, spec, (10, 0)) != key
    assert compiled_index.key(kernel, spec[:-1] + (8,), (9, 0)) != key
    assert compiled_index.load(key, kernel) is None  # nothing recorded yet
    assert compiled_index.record(key, compiled)

    loaded = compiled_index.load(key, kernel)
    assert loaded is not None and loaded is not compiled
    assert loaded.hash == compiled.hash and loaded.kernel == compiled.kernel
    assert loaded.metadata == compiled.metadata and loaded.packed_metadata == compiled.packed_metadata
    # in order: the launcher passes the arguments in the signature's order
    assert list(loaded.src.signature.items()) == list(src.signature.items())
    assert loaded.src.constants == src.constants
    assert loaded.src.attrs == {(0,): [["tt.divisibility", 16]]}

    # A file that no longer matches the entry: nothing served.
    cubin = compiled.metadata_group[compiled.name + ".cubin"]
    data = open(cubin, "rb").read()
    open(cubin, "wb").write(data[:-1] + bytes([data[-1] ^ 1]))
    assert compiled_index.load(key, kernel) is None
    open(cubin, "wb").write(data)
    assert compiled_index.load(key, kernel) is not None
    # An entry recorded under another key (a copied or damaged file): nothing served.
    entry_path = triton.runtime.cache.get_cache_manager(key).get_file(compiled_index.ENTRY_FILE)
    entry = json.load(open(entry_path))
    json.dump({**entry, "key": "0" * 64}, open(entry_path, "w"))
    assert compiled_index.load(key, kernel) is None
    open(entry_path, "w").write("{not json")
    assert compiled_index.load(key, kernel) is None
    # Where Triton must see every compile, no key at all.
    triton.knobs.compilation.always_compile = True
    assert compiled_index.key(kernel, spec, (9, 0)) is None
    print("round trip ok")
    """
)


def test_an_entry_serves_the_same_kernel_and_nothing_that_does_not_match(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path)
    run = subprocess.run(
        [sys.executable, "-c", ROUND_TRIP], env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "round trip ok" in run.stdout


SECOND_PROCESS = textwrap.dedent(
    """
    import torch, triton.runtime.cache as cache
    import kernels_triton
    from kernels_triton import compiled_index, launch

    def refuse():
        raise AssertionError("Triton's installation hash was computed: the JIT ran")

    x = torch.randn(300, 7001, device="cuda") * 8
    if {second}:
        cache.triton_key = refuse
    y = kernels_triton.softmax(x)
    torch.testing.assert_close(y, torch.softmax(x, -1), atol=1e-6, rtol=1e-5)
    print("ok", len(compiled_index._LOADED))
    """
)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_second_process_launches_without_the_jit(tmp_path):
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path), "KERNELS_TRITON_WARM_UP": "0"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")  # no tuned picks
    for second in (False, True):
        code = SECOND_PROCESS.format(second=second)
        run = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
        )
        assert run.returncode == 0, run.stderr[-3000:]
        assert run.stdout.split()[:2] == ["ok", "1"]


SPLIT_ROW_SECOND_PROCESS = textwrap.dedent(
    """
    import torch, triton.runtime.cache as cache
    import kernels_triton
    from kernels_triton import compiled_index, launch, split_row

    def refuse():
        raise AssertionError("Triton's installation hash was computed: the JIT ran")

    x = torch.randn(8, 128257, device="cuda", dtype=torch.bfloat16) * 8
    dy = torch.randn_like(x)
    assert launch.split_row_applies("softmax_fwd", 8, 128257, x.dtype, x.device)
    assert launch.split_row_applies("softmax_bwd", 8, 128257, x.dtype, x.device)
    if {second}:
        cache.triton_key = refuse
    y = kernels_triton.softmax(x)
    dx = kernels_triton.softmax_backward(y, dy)
    ref = torch.softmax(x.double(), -1)
    torch.testing.assert_close(y.double(), ref, atol=4e-3, rtol=1e-2)
    ref_dx = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
    torch.testing.assert_close(dx.double(), ref_dx, atol=2e-2, rtol=2e-2)
    print("ok", len(compiled_index._LOADED))
    """
)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_second_process_launches_the_split_row_kernels_without_the_jit(tmp_path):
    """As above, for a row long enough for the split-row kernels (a Llama-3 vocabulary in bf16),
    forward and backward."""
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path), "KERNELS_TRITON_WARM_UP": "0"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    for second in (False, True):
        code = SPLIT_ROW_SECOND_PROCESS.format(second=second)
        run = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
        )
        assert run.returncode == 0, run.stderr[-3000:]
        assert run.stdout.split()[0] == "ok" and int(run.stdout.split()[1]) >= 2
