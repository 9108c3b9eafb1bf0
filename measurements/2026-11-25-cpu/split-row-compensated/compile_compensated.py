# A frozen script of 2026-11-25 (README.md), run at 07a0b05.
import os
import re
import subprocess
import tempfile

import triton
from kernels_triton import split_row as sr
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

print("triton", triton.__version__)
PTXAS = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/ptxas")


def regs(ptx):
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
    out = subprocess.run(
        [PTXAS, "-v", "-arch=sm_90a", f.name, "-o", "/dev/null"], capture_output=True, text=True
    ).stderr
    m = re.search(r"Used (\d+) registers", out)
    sp = re.search(r"(\d+) bytes spill stores", out)
    return (m.group(1) if m else out[-300:]), (sp.group(1) if sp else "?")


def compile_one(n, chunk, warps, prefetch, comp, dt):
    k = sr._split_fwd_kernel
    names = k.arg_names
    sig = {a: "constexpr" for a in names}
    ints = ["M", "N", "n_groups", "split", "n_words"] + [a for a in names if a.endswith("row_stride")]
    for a in names:
        if a.endswith("_ptr"):
            sig[a] = "*i64" if a == "scratch_ptr" else dt
        if a in ints:
            sig[a] = "i32"
    meta = sr._meta(n, sr.SplitConfig(chunk, warps, prefetch=prefetch, compensated=comp), sr.SPIN_LIMIT)
    nw = meta.pop("num_warps")
    meta.pop("num_stages")
    consts = {(names.index(a),): v for a, v in meta.items()}
    c = triton.compile(
        ASTSource(k, sig, constexprs=consts),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": nw, "num_stages": 1},
    )
    ptx = c.asm["ptx"]
    print(
        dt,
        n,
        chunk,
        warps,
        "prefetch" if prefetch else "-",
        "comp" if comp else "plain",
        "regs/spill",
        regs(ptx),
        "add.f32",
        len(re.findall(r"add(\.rn)?\.f32", ptx)),
        "sub.f32",
        len(re.findall(r"sub(\.rn)?\.f32", ptx)),
        flush=True,
    )


for comp in (False, True):
    compile_one(131072, 4096, 2, False, comp, "*fp32")
    compile_one(262144, 4096, 2, False, comp, "*fp32")
    compile_one(128257, 1024, 1, False, comp, "*fp32")
