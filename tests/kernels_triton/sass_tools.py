"""Compiling kernels_triton's kernels for sm_90 without a GPU, to read what a launch would run:
the tests' check of the GPU-only side (vector widths, L2 hints, registers and spills, the cluster
kernels' inline PTX), run in a process without TRITON_INTERPRET (conftest.without_interpreter).

A kernel is specialised as a launch on contiguous (M, N) tensors would specialise it (16-byte
aligned pointers, integers divisible by 16 marked so, the constexprs of launch.tile_meta or of
cluster.kernel_for) and compiled by Triton for the target with its bundled ptxas.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import tempfile

import torch
import triton
from kernels_triton import cluster, xent_cluster
from kernels_triton.configs import INTERPRET, SoftmaxConfig
from kernels_triton.kernels import KERNELS, STREAMS
from kernels_triton.launch import tile_meta
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

POINTER_TYPES = {torch.float32: "*fp32", torch.float16: "*fp16", torch.bfloat16: "*bf16"}


def compile_for(name: str, M: int, N: int, dtype: torch.dtype, config: SoftmaxConfig, arch: int = 90):
    """The compiled kernel (Triton's CompiledKernel: .asm["ptx"], .asm["cubin"]) that a
    launch of KERNELS[name] on contiguous (M, N) tensors with `config` would use."""
    fn = KERNELS[name]
    n_tensors = STREAMS[name] + 1
    integers = dict(zip(fn.arg_names[n_tensors:], [N] * n_tensors + [M, N]))  # row strides, M, N
    integers["M"] = None  # never specialised (kernels.py)
    meta = tile_meta(config, M, N, [N] * n_tensors, dtype.itemsize)
    constexprs = {arg: meta[arg] for arg in fn.arg_names[n_tensors:] if arg not in integers}
    return _compile(fn, dtype, constexprs, integers, arch, {"num_warps": config.num_warps})


def compile_cluster(direction: str, N: int, dtype: torch.dtype, arch: int = 90):
    """The cluster kernel of `direction` ("fwd", "bwd") that a launch on contiguous, 16-byte
    aligned rows of N columns would use (kernels_triton.cluster.compiled_launch)."""
    vec = cluster.packs([torch.empty((1, N), dtype=dtype, device="meta")])  # at address 0: aligned
    fn, constexprs, warps, maxnreg = cluster.kernel_for(direction, N, dtype, vec)
    # N and the row strides (N: contiguous rows); slot_base is never specialised (cluster.py)
    integers = {arg: N for arg in fn.arg_names if not arg.endswith("_ptr") and arg not in constexprs}
    integers["slot_base"] = None
    options = {"num_warps": warps, "num_stages": 1} | ({} if maxnreg is None else {"maxnreg": maxnreg})
    return _compile(fn, dtype, constexprs, integers, arch, options)


def compile_cluster_op(op: str, direction: str, N: int, dtype: torch.dtype, arch: int = 90):
    """The cluster kernel of op ("log_softmax": cluster.kernel_for; "cross_entropy", forward only:
    xent_cluster.kernel_for) as a launch on contiguous, 16-byte aligned rows of N columns would
    compile it (cross-entropy: the gradient of the mean written, int64 targets)."""
    vec = cluster.packs([torch.empty((1, N), dtype=dtype, device="meta")])
    pointers, extra = {}, {}
    if op == "cross_entropy":  # xent_launch.splits() of contiguous rows at a boundary
        pack = 16 // dtype.itemsize
        align = math.gcd(N, pack)
        vec, extra = (
            (0 if align == pack else pack),
            {"ALIGN": align, "LIKE": True, "WRITE_GRAD": True, "MEAN": True, "ZERO_TICKET": False},
        )
        pointers = {"t_ptr": "*i64", "loss_ptr": "*fp32", "stats_ptr": "*fp32", "count_ptr": "*i32"}
    if op == "cross_entropy":
        fn, constexprs, warps, maxnreg = xent_cluster.kernel_for(N, dtype, vec)
    else:
        fn, constexprs, warps, maxnreg = cluster.kernel_for(direction, N, dtype, vec, op)
    constexprs = {**constexprs, **extra}
    integers = {arg: N for arg in fn.arg_names if not arg.endswith("_ptr") and arg not in constexprs}
    integers.update(slot_base=None, ignore_index=None, M=None, OFF=0)
    options = {"num_warps": warps, "num_stages": 1} | ({} if maxnreg is None else {"maxnreg": maxnreg})
    return _compile(fn, dtype, constexprs, integers, arch, options, pointers)


def _compile(
    fn,
    dtype: torch.dtype,
    constexprs: dict,
    integers: dict,
    arch: int,
    options: dict,
    pointers: dict | None = None,
):
    """fn compiled for sm_`arch` as Triton's launcher specialises a launch on `dtype` tensors at
    16-byte aligned addresses: every *_ptr argument a `dtype` pointer divisible by 16, the
    `constexprs` by value, and each integer argument of `integers` marked divisible by 16 where
    its value is (None: an argument the kernel asks Triton never to specialise)."""
    if INTERPRET:
        raise RuntimeError("compiling needs the kernels as Triton compiles them: unset TRITON_INTERPRET")
    signature, attrs = {}, {}
    for i, arg in enumerate(fn.arg_names):
        if arg.endswith("_ptr"):
            signature[arg] = (pointers or {}).get(arg, POINTER_TYPES[dtype])
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif arg in constexprs:
            signature[arg] = "constexpr"
        else:
            signature[arg] = "i32"
            if integers[arg] is not None and integers[arg] % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
    source = ASTSource(fn, signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", arch, 32), options=options)


def resources(compiled) -> dict[str, int]:
    """Registers a thread and stack bytes a thread (spills) of a compiled kernel, from the
    cuobjdump that Triton bundles."""
    usage = _cuobjdump(compiled, "-res-usage")
    return {
        "registers": int(re.search(r"REG:(\d+)", usage)[1]),
        "stack": int(re.search(r"STACK:(\d+)", usage)[1]),
    }


def sass(compiled) -> str:
    """The SASS of a compiled kernel, from the cuobjdump that Triton bundles."""
    return _cuobjdump(compiled, "-sass")


def _cuobjdump(compiled, flag: str) -> str:
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        return subprocess.run([tool, flag, f.name], capture_output=True, text=True, check=True).stdout


def memory_instructions(sass_text: str) -> dict[str, int]:
    """Global and local loads and stores by width (LDG.E.128, STG.E.64, LDL, STL, ...)."""
    counts: dict[str, int] = {}
    for op in re.findall(r"\b((?:LDG|STG)(?:\.E)?(?:\.\w+)*|LDL|STL)\b", sass_text):
        counts[op] = counts.get(op, 0) + 1
    return counts
