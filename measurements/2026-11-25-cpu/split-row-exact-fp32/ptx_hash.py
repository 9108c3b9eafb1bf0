"""Compile the split-row forward kernel for sm_90 (no GPU needed) at the configurations below and
print a hash of each PTX with its debug lines, comments and label names removed: two sources whose
hashes match compile to the same instructions. Run with kernels_triton (any commit) and a Triton on
PYTHONPATH:

    PYTHONPATH=TRITON_DIR:packages/kernels-triton/src python ptx_hash.py
"""

import hashlib
import re

import triton
from kernels_triton import split_row as sr
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


def ptx_hash(n: int, chunk: int, warps: int, prefetch: bool, pointer: str) -> str:
    kernel = sr._split_fwd_kernel
    names = kernel.arg_names
    ints = {"M", "N", "n_groups", "split", "n_words"} | {a for a in names if a.endswith("row_stride")}
    signature = {
        a: "*i64"
        if a == "scratch_ptr"
        else pointer
        if a.endswith("_ptr")
        else "i32"
        if a in ints
        else "constexpr"
        for a in names
    }
    meta = sr._meta(n, sr.SplitConfig(chunk, warps, prefetch=prefetch), sr.SPIN_LIMIT)
    num_warps = meta.pop("num_warps")
    meta.pop("num_stages")
    constants = {(names.index(a),): v for a, v in meta.items()}
    compiled = triton.compile(
        ASTSource(kernel, signature, constexprs=constants),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": num_warps, "num_stages": 1},
    )
    text = compiled.asm["ptx"].split(".section\t.debug")[0]
    skip = (".loc", ".file", "//", "$L__")
    text = "\n".join(line for line in text.splitlines() if line.strip() and not line.strip().startswith(skip))
    return hashlib.sha256(re.sub(r"\$L__\w+", "L", text).encode()).hexdigest()[:12]


if __name__ == "__main__":
    print("triton", triton.__version__)
    for pointer in ("*fp32", "*bf16"):
        for n, chunk, warps in ((131072, 4096, 2), (262144, 4096, 2), (128257, 1024, 1), (2000, 256, 4)):
            for prefetch in (False, True):
                print(
                    pointer,
                    n,
                    chunk,
                    warps,
                    "prefetch" if prefetch else "no-prefetch",
                    ptx_hash(n, chunk, warps, prefetch, pointer),
                )
