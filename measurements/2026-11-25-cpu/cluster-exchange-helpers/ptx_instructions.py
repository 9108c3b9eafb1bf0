"""Hash the PTX instructions of every kernels_cuda specialization (sm_90), line info and debug
sections left out, so that a refactor of the CUDA sources can be shown not to change any kernel.

    KERNELS_CUDA_CACHE_DIR=$(mktemp -d) python measurements/2026-11-25-cpu/cluster-exchange-helpers/ptx_instructions.py OUT.txt
"""

import hashlib
import re
import sys

from kernels_cuda import codegen

lines_out = []
for r in sorted(codegen.compile_all(["sm_90"], jobs=2), key=lambda r: r.spec.name):
    ptx = r.ptx_path.read_text().split(".section\t.debug")[0]
    body = [line for line in ptx.splitlines() if not re.match(r"\s*(\.loc|\.file|//)", line)]
    lines_out.append(f"{r.spec.name} {hashlib.sha256(chr(10).join(body).encode()).hexdigest()[:16]}")
with open(sys.argv[1], "w") as f:
    f.write("\n".join(lines_out) + "\n")
print(f"{len(lines_out)} specializations, NVRTC %d.%d" % codegen.nvrtc_version())
