"""Compile the softmax kernels for a GPU without one, to read what a launch would run.

The kernel is specialised as a launch on contiguous (M, N) tensors would specialise it
(16-byte aligned pointers, integers divisible by 16 marked so, the constexprs of
kernels_triton.launch.tile_meta) and compiled by Triton for the target (sm_90 by
default) with its bundled ptxas. The interpreter never compiles: this is how a CPU
machine checks the GPU-only side -- vector widths, L2 hints, spills -- before a GPU does.

    python -m kernels_triton.offline softmax_fwd 4096 600 bfloat16 --block 1024 --warps 4 [--sass]
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

from kernels_triton.configs import INTERPRET, SoftmaxConfig
from kernels_triton.kernels import KERNELS, STREAMS
from kernels_triton.launch import tile_meta

POINTER_TYPES = {torch.float32: "*fp32", torch.float16: "*fp16", torch.bfloat16: "*bf16"}


def compile_for(name: str, M: int, N: int, dtype: torch.dtype, config: SoftmaxConfig, arch: int = 90):
    """The compiled kernel (Triton's CompiledKernel: .asm["ptx"], .asm["cubin"]) that a
    launch of KERNELS[name] on contiguous (M, N) tensors with `config` would use."""
    if INTERPRET:
        raise RuntimeError("compiling needs the kernels as Triton compiles them: unset TRITON_INTERPRET")
    fn = KERNELS[name]
    n_tensors = STREAMS[name] + 1
    integers = dict(zip(fn.arg_names[n_tensors:], [N] * n_tensors + [M, N]))  # row strides, M, N
    meta = tile_meta(config, M, N, [N] * n_tensors, dtype.itemsize)
    signature, attrs, constexprs = {}, {}, {}
    for i, arg in enumerate(fn.arg_names):
        if arg.endswith("_ptr"):
            signature[arg] = POINTER_TYPES[dtype]
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif arg in integers:  # M is never specialised (kernels.py)
            signature[arg] = "i32"
            if arg != "M" and integers[arg] % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            signature[arg] = "constexpr"
            constexprs[arg] = meta[arg]
    source = ASTSource(fn, signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", arch, 32), options={"num_warps": config.num_warps})


def sass(compiled) -> str:
    """The SASS of a compiled kernel, from the cuobjdump that Triton bundles."""
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        return subprocess.run([tool, "-sass", f.name], capture_output=True, text=True, check=True).stdout


def memory_instructions(sass_text: str) -> dict[str, int]:
    """Global and local loads and stores by width (LDG.E.128, STG.E.64, LDL, STL, ...)."""
    counts: dict[str, int] = {}
    for op in re.findall(r"\b((?:LDG|STG)(?:\.E)?(?:\.\w+)*|LDL|STL)\b", sass_text):
        counts[op] = counts.get(op, 0) + 1
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernels_triton.offline", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("kernel", choices=sorted(KERNELS))
    parser.add_argument("M", type=int)
    parser.add_argument("N", type=int)
    parser.add_argument("dtype", choices=[str(d)[6:] for d in POINTER_TYPES])
    parser.add_argument("--block", type=int, required=True)
    parser.add_argument("--warps", type=int, default=4)
    parser.add_argument("--l2-hints", action="store_true")
    parser.add_argument("--arch", type=int, default=90)
    parser.add_argument("--sass", action="store_true", help="print the whole SASS")
    args = parser.parse_args(argv)
    config = SoftmaxConfig(args.block, args.warps, args.l2_hints)
    compiled = compile_for(args.kernel, args.M, args.N, getattr(torch, args.dtype), config, args.arch)
    text = sass(compiled)
    print(
        text
        if args.sass
        else f"{args.kernel} {args.M}x{args.N} {args.dtype} {config}: "
        f"shared {compiled.metadata.shared} B, {memory_instructions(text)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
