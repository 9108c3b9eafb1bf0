"""Compile both split-row kernels for sm_90 (no GPU needed) at the default chunk and warps and
print, per kernel, the lanes the peers' words are polled in, the bar.sync count of the PTX and
the registers ptxas reports. Run with kernels_triton (any commit) and a Triton on PYTHONPATH:

    PYTHONPATH=TRITON_DIR:packages/kernels-triton/src python compile_split_row.py
"""

import os
import re
import subprocess
import tempfile

import triton
from kernels_triton import split_row as sr
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

PTXAS = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/ptxas")


def registers(ptx: str) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
    out = subprocess.run(
        [PTXAS, "-v", "-arch=sm_90a", f.name, "-o", os.devnull], capture_output=True, text=True
    ).stderr
    os.unlink(f.name)
    m = re.search(r"Used (\d+) registers", out)
    return m.group(1) if m else out[-200:]


def compile_one(direction, n, chunk, warps, prefetch, pointer="*bf16"):
    kernel = sr._split_fwd_kernel if direction == "fwd" else sr._split_bwd_kernel
    names = kernel.arg_names
    ints = {"M", "N", "n_groups", "split", "n_words"} | {a for a in names if a.endswith("row_stride")}
    signature = {}
    for a in names:
        if a == "scratch_ptr":
            signature[a] = "*i64"
        elif a.endswith("_ptr"):
            signature[a] = pointer
        else:
            signature[a] = "i32" if a in ints else "constexpr"
    meta = sr._meta(n, sr.SplitConfig(chunk, warps, prefetch=prefetch), sr.SPIN_LIMIT)
    num_warps = meta.pop("num_warps")
    meta.pop("num_stages")
    constants = {(names.index(a),): v for a, v in meta.items()}
    compiled = triton.compile(
        ASTSource(kernel, signature, constexprs=constants),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": num_warps, "num_stages": 1},
    )
    ptx = compiled.asm["ptx"]
    lanes = meta.get("LANES", meta.get("SPLIT_P2"))
    print(
        f"{direction} N={n} chunk={chunk} warps={warps} prefetch={prefetch} lanes={lanes}: "
        f"bar.sync {len(re.findall(r'bar.sync|barrier.sync', ptx))}, registers {registers(ptx)}"
    )


if __name__ == "__main__":
    print("triton", triton.__version__)
    for direction, warps in (("fwd", 2), ("bwd", 4)):
        for n in (131072, 262144):
            for prefetch in (False, True):
                compile_one(direction, n, 4096, warps, prefetch)
    compile_one("fwd", 2000, 256, 4, False, "*fp32")  # the forced-fallback test's config
    compile_one("bwd", 2000, 256, 4, False, "*fp32")
