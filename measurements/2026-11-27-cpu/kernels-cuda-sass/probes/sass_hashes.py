# A probe: not part of any package.
"""A hash of the SASS of every kernels_cuda specialization (codegen.all_specs), compiled on the
CPU: NVRTC's PTX for sm_90, assembled by the ptxas Triton bundles (13.1, so the PTX is relabelled
.version 8.8) and disassembled by its nvdisasm, addresses stripped. Two trees compare equal where
their machine code is the same.

    sass_hashes.py OUT.json"""

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

import triton
from kernels_cuda import (
    codegen,
    softmax_backward,  # noqa: F401 -- registers its specializations
)

BIN = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
out = {}
for spec in codegen.all_specs():
    if not spec.supports_arch("sm_90"):
        continue
    _, ptx, _, _ = codegen._nvrtc_compile(spec, "sm_90")
    ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
    ptx = re.sub(r"^\.version .*$", ".version 8.8", ptx, flags=re.M)
    with tempfile.TemporaryDirectory() as d:
        open(f"{d}/k.ptx", "w").write(ptx)
        subprocess.run([f"{BIN}/ptxas", "-arch=sm_90", "-O3", f"{d}/k.ptx", "-o", f"{d}/k.cubin"], check=True)
        text = subprocess.run(
            [f"{BIN}/nvdisasm", "-c", f"{d}/k.cubin"], capture_output=True, text=True, check=True
        )
    lines = [
        re.sub(r"/\*[0-9a-f]{4}\*/", "", ln).split(";")[0].strip()
        for ln in text.stdout.splitlines()
        if re.search(r"/\*[0-9a-f]{4}\*/", ln)
    ]
    out[spec.name] = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
with open(sys.argv[1], "w") as f:
    json.dump(out, f, indent=0, sort_keys=True)
print(len(out), "forms from", codegen.__file__)
