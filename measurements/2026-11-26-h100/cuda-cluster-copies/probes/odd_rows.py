# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/cuda-cluster-copies/README.md), run from the repository root as .probes/odd_rows.py.
# ruff: noqa: E741, B023, F401 -- kept as it ran
"""64x50257 fp32: kernels_cuda.softmax against the tune's path (variants.plan("auto") with 16-byte
packs, run_launch), with the package's 04 and with the frozen copy of the bulk-copy 04
(.probes/cuda/04_softmax_cluster.cu), each in a subprocess (a misaligned address poisons the
context)."""

import subprocess
import sys

CODE = r"""
import sys, math, torch
from pathlib import Path
import kernels_cuda
from kernels_cuda import arrays, codegen
from kernels_cuda import softmax_variants as variants
if sys.argv[1] == "old":
    codegen.SOURCE_DIR = Path(".probes/cuda").resolve(); codegen._headers.cache_clear()
M, N, dtype = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
x = torch.randn(M, N, device="cuda").to(getattr(torch, dtype))
ref = torch.softmax(x.double(), -1)
if sys.argv[2] == "api":
    y = kernels_cuda.softmax(x)
else:
    dev = variants._device(0)
    launch = variants.plan("auto", M, N, dtype, variants.full_vec(dtype), dev)
    print(launch)
    y = torch.full_like(x, math.nan)
    variants.run_launch(launch, arrays.as_rows(arrays._TorchOps, x), arrays.as_rows(arrays._TorchOps, y), 0, arrays._TorchOps.stream(x))
torch.cuda.synchronize()
print("err", (y.double() - ref).abs().max().item())
"""
for code in ("new", "old"):
    for path in ("api", "tune"):
        for shape in (("64", "50257", "float32"), ("64", "50257", "bfloat16"), ("3", "40001", "float32")):
            r = subprocess.run(
                [sys.executable, "-c", CODE, code, path, *shape],
                capture_output=True,
                text=True,
                env={**__import__("os").environ, "CUDA_LAUNCH_BLOCKING": "1"},
            )
            out = (r.stdout + r.stderr).strip().splitlines()
            print(
                code,
                path,
                " ".join(shape),
                "rc",
                r.returncode,
                "|",
                " / ".join(l for l in out if "err" in l or "Error" in l or "Launch(" in l)[:400],
                flush=True,
            )
