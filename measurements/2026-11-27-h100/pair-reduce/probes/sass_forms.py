"""Hash the SASS of every cluster forward form (N, dtype, one wave or many) that kernels_triton
would compile, without a GPU: `python sass_forms.py OUT.json` (Triton of the device, 3.6, on the
path). Two trees whose hashes agree for a form run the same instructions for it."""

import hashlib
import json
import sys

import torch
from kernels_triton import offline

hashes = {}
for n in (32768, 50257, 65536, 70001, 131072, 200000, 262144):
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        for one_wave in (False, True):
            compiled = offline.compile_cluster("fwd", n, dtype, one_wave=one_wave)
            hashes[f"fwd {n} {dtype} {one_wave}"] = hashlib.sha256(
                offline.sass(compiled).encode()
            ).hexdigest()[:16]
json.dump(hashes, open(sys.argv[1], "w"), indent=0)
