"""Compile the softmax kernels for a GPU without one, to read what a launch would run.

The kernel is specialised as a launch on contiguous (M, N) tensors would specialise it
(16-byte aligned pointers, integers divisible by 16 marked so, the constexprs of
kernels_triton.launch.tile_meta, or of kernels_triton.cluster.kernel_for for the cluster
kernels) and compiled by Triton for the target (sm_90 by default) with its bundled ptxas. The
interpreter never compiles: this is how a CPU machine checks the GPU-only side -- vector
widths, L2 hints, registers and spills, the cluster kernels' inline PTX -- before a GPU does.

    python -m kernels_triton.offline softmax_fwd 4096 600 bfloat16 --block 1024 --warps 4 [--sass]
    python -m kernels_triton.offline softmax_fwd 4096 600 float32 --block 4096 --warps 4 --warp-rows
    python -m kernels_triton.offline cluster_fwd 256 262144 bfloat16 [--sms 132]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from kernels_triton import cluster
from kernels_triton.configs import INTERPRET, SoftmaxConfig
from kernels_triton.kernels import KERNELS, STREAMS
from kernels_triton.launch import tile_meta

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


def compile_cluster(direction: str, N: int, dtype: torch.dtype, arch: int = 90, one_wave: bool = False):
    """The compiled cluster kernel of `direction` ("fwd", "bwd") that a launch on contiguous,
    16-byte aligned rows of N columns would use (kernels_triton.cluster.compiled_launch); one_wave:
    a forward launch that cluster.fits_one_wave."""
    vec = cluster.packs([torch.empty((1, N), dtype=dtype, device="meta")])  # at address 0: aligned
    fn, constexprs, warps, maxnreg = cluster.kernel_for(direction, N, dtype, vec, one_wave)
    # N and the row strides (N: contiguous rows); slot_base is never specialised (cluster.py)
    integers = {arg: N for arg in fn.arg_names if not arg.endswith("_ptr") and arg not in constexprs}
    integers["slot_base"] = None
    options = {"num_warps": warps, "num_stages": 1} | ({} if maxnreg is None else {"maxnreg": maxnreg})
    return _compile(fn, dtype, constexprs, integers, arch, options)


def _compile(fn, dtype: torch.dtype, constexprs: dict, integers: dict, arch: int, options: dict):
    """fn compiled for sm_`arch` as Triton's launcher specialises a launch on `dtype` tensors at
    16-byte aligned addresses: every *_ptr argument a `dtype` pointer divisible by 16, the
    `constexprs` by value, and each integer argument of `integers` marked divisible by 16 where
    its value is (None: an argument the kernel asks Triton never to specialise)."""
    if INTERPRET:
        raise RuntimeError("compiling needs the kernels as Triton compiles them: unset TRITON_INTERPRET")
    signature, attrs = {}, {}
    for i, arg in enumerate(fn.arg_names):
        if arg.endswith("_ptr"):
            signature[arg] = POINTER_TYPES[dtype]
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


CLUSTER_KERNELS = {"cluster_fwd": "fwd", "cluster_bwd": "bwd"}


def main(argv: list[str] | None = None) -> int:
    # Triton 3.9 warns on every compile while this is unset; "1" is its current default, so
    # setting it only silences the warning (a user's own setting wins).
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    parser = argparse.ArgumentParser(
        prog="python -m kernels_triton.offline", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("kernel", choices=sorted(KERNELS) + sorted(CLUSTER_KERNELS))
    parser.add_argument("M", type=int)
    parser.add_argument("N", type=int)
    parser.add_argument("dtype", choices=[str(d)[6:] for d in POINTER_TYPES])
    parser.add_argument("--block", type=int, help="the tile (the cluster kernels choose their own)")
    parser.add_argument("--warps", type=int, default=4)
    parser.add_argument("--l2-hints", action="store_true")
    parser.add_argument(
        "--warp-rows", action="store_true", help="a warp a row (--block = warps x next_pow2(N))"
    )
    parser.add_argument("--arch", type=int, default=90)
    parser.add_argument(
        "--sms", type=int, default=132, help="SMs of the GPU (cluster_fwd --any-order: one wave?)"
    )
    parser.add_argument(
        "--any-order", action="store_true", help="cluster_fwd as batch_invariant=False launches it"
    )
    parser.add_argument("--sass", action="store_true", help="print the whole SASS")
    args = parser.parse_args(argv)
    dtype = getattr(torch, args.dtype)
    if args.kernel in CLUSTER_KERNELS:
        if args.sms < 1:
            parser.error("--sms: at least 1")
        direction = CLUSTER_KERNELS[args.kernel]
        longest = cluster.max_cols(direction, dtype)
        if not cluster.MIN_COLS <= args.N <= longest:
            parser.error(f"N: {args.kernel} takes {cluster.MIN_COLS} to {longest} columns in {args.dtype}")
        one_wave = args.any_order and cluster.fits_one_wave(args.M, args.N, args.sms)
        compiled = compile_cluster(direction, args.N, dtype, args.arch, one_wave)
        what = "cluster, one wave" if one_wave and direction == "fwd" else "cluster"
    else:
        if args.block is None:
            parser.error(f"--block is required for {args.kernel}")
        try:
            config = SoftmaxConfig(args.block, args.warps, args.l2_hints, args.warp_rows)
            tile_meta(config, args.M, args.N, [args.N], dtype.itemsize)  # checks a warp-rows block
        except ValueError as exc:
            parser.error(str(exc))
        compiled, what = compile_for(args.kernel, args.M, args.N, dtype, config, args.arch), config
    text = sass(compiled)
    print(
        text
        if args.sass
        else f"{args.kernel} {args.M}x{args.N} {args.dtype} {what}: shared {compiled.metadata.shared} B, "
        f"{resources(compiled)}, {memory_instructions(text)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
