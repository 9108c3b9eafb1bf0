# A probe: not part of any package.
"""Instruction counts of softmax forward kernels for sm_90, compiled on the CPU: kernels_cuda's
v3 forms (NVRTC's PTX through the ptxas Triton bundles, relabelled .version 8.8, as
../kernels-cuda-sass/ does), or a cubin compiled elsewhere (QuACK's: probes/compile_quack.py;
kernels_triton's: `python -m kernels_triton.offline ... --sass`), disassembled by cuobjdump.

    sass_counts.py v3                 # the v3 forms of the tree this runs in
    sass_counts.py FILE.cubin|FILE.sass ...

Per kernel: instructions, the index of the first global load, and counts of the memory,
barrier and MUFU instructions."""

import os
import re
import subprocess
import sys
import tempfile

import triton

BIN = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
KINDS = ("LDG", "LDGSTS", "LDS", "STG", "BAR", "MUFU", "SHFL")


def counts(name: str, sass: str) -> str:
    ops = [ln.split(";")[0].split() for ln in sass.splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", ln)]
    ops = [next(w for w in words[1:] if not w.startswith("@")) for words in ops]
    first = next((i for i, op in enumerate(ops) if op.startswith("LDG")), None)
    kinds = " ".join(f"{k} {sum(op.split('.')[0] == k for op in ops)}" for k in KINDS)
    return f"{name:44s} {len(ops):5d} instructions, first load at {first}; {kinds}"


def v3_forms():
    from kernels_cuda import codegen
    from kernels_cuda import softmax_variants as sv

    for dtype, tpr, items in (
        ("bfloat16", 256, 4),
        ("bfloat16", 128, 8),
        ("bfloat16", 64, 2),
        ("float32", 256, 8),
        ("float32", 128, 2),
    ):
        spec = sv.fused_spec(dtype, tpr, items, sv.full_vec(dtype))
        _, ptx, _, _ = codegen._nvrtc_compile(spec, "sm_90")
        ptx = re.sub(
            r"^\.version .*$", ".version 8.8", ptx.decode() if isinstance(ptx, bytes) else ptx, flags=re.M
        )
        with tempfile.TemporaryDirectory() as d:
            open(f"{d}/k.ptx", "w").write(ptx)
            subprocess.run(
                [f"{BIN}/ptxas", "-arch=sm_90", "-O3", f"{d}/k.ptx", "-o", f"{d}/k.cubin"], check=True
            )
            sass = subprocess.run(
                [f"{BIN}/cuobjdump", "-sass", f"{d}/k.cubin"], capture_output=True, text=True
            ).stdout
        yield f"v3 {dtype} TPR={tpr} ITEMS={items}", sass


def files(paths):
    for path in paths:
        if path.endswith(".cubin"):
            sass = subprocess.run([f"{BIN}/cuobjdump", "-sass", path], capture_output=True, text=True).stdout
        else:
            sass = open(path).read()
        yield os.path.basename(path)[:40], sass


if __name__ == "__main__":
    for name, sass in v3_forms() if sys.argv[1:] == ["v3"] else files(sys.argv[1:]):
        print(counts(name, sass))
