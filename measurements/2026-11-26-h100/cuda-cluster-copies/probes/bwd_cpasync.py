# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/cuda-cluster-copies/README.md), run from the repository root as .probes/bwd_cpasync.py.
# ruff: noqa: E741, B023, F401 -- kept as it ran
"""Device time of kernels_cuda.softmax_backward with 07 as packaged (one bulk copy a chunk) or as
.probes/cuda07/ has it (cp.async from every thread), the first argument choosing; at the cluster
sizes 8 (auto's) and 16. labtools.bench.time_cuda: L2 cold, inputs rotated, median; each case
checked against float64."""

import sys
from pathlib import Path

import torch
from kernels_cuda import codegen
from kernels_cuda import softmax_backward as bw
from labtools.bench import l2_bytes, n_input_sets, time_cuda

which = sys.argv[1]
if which == "probe":
    codegen.SOURCE_DIR = Path(".probes/cuda07").resolve()
    codegen._headers.cache_clear()
SHAPES = [(4096, 32768), (1024, 131072), (256, 262144), (2048, 65536), (64, 50257), (16, 131072)]
for dtype in (torch.float32, torch.bfloat16):
    for M, N in SHAPES:
        line = []
        for cluster in (8, 16):
            bw.AUTO = bw.BackwardConfig(cluster_size=cluster)
            bw._dense_calls.clear()
            nbytes = 3 * M * N * dtype.itemsize
            sets = []
            for k in range(n_input_sets(nbytes, l2_bytes())):
                g = torch.Generator(device="cuda").manual_seed(k)
                x = torch.randn((M, N), generator=g, device="cuda")
                y = torch.softmax(x, -1).to(dtype)
                dy = torch.randn((M, N), generator=g, device="cuda").to(dtype)
                sets.append((y, dy))
            y, dy = sets[0]
            ref = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
            err = (bw.softmax_backward(y, dy).double() - ref).abs().max().item()
            us = time_cuda(lambda y, dy: bw.softmax_backward(y, dy), sets, time_cap_s=0.3).median_us
            line.append(f"C={cluster} {us:7.1f} us err {err:.1e}")
            del sets
        print(f"{which} {M}x{N} {str(dtype)[6:]:8s} " + " | ".join(line), flush=True)
