"""Compile every cluster kernel Spec (04 softmax_cluster and 07 softmax_backward_cluster, every
dtype and cluster size) with NVRTC for sm_90 (no GPU needed) and print a hash of its PTX without
debug lines and sections: two sources whose hashes match compile to the same instructions.

    uv run python measurements/2026-11-25-cpu/cuda-row-parts/ptx_hash.py
"""

import hashlib

from kernels_cuda import codegen

for spec in sorted(codegen.all_specs(), key=lambda s: s.name):
    if spec.kernel not in ("softmax_cluster", "softmax_backward_cluster"):
        continue
    _, ptx, _, _ = codegen._nvrtc_compile(spec, "sm_90")
    text = (ptx.decode() if isinstance(ptx, bytes) else ptx).split(".section\t.debug")[0]
    code = [
        line
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith((".loc", ".file", "//"))
    ]
    print(spec.name, hashlib.sha256("\n".join(code).encode()).hexdigest()[:12])
