# A frozen probe of 2026-11-25 (measurements/2026-11-25-h100/cluster-exchange/README.md), run from the repository root as .probes/bwd_cluster_sizes.py.
"""Device time of kernels_cuda.softmax_backward's cluster kernel by cluster size (the chunk bytes
BackwardConfig allows a block), for whichever tree's kernels_cuda is on the path. do_bench: L2
flushed, median. Checked against torch's backward first."""

import sys
from dataclasses import replace

import kernels_cuda.softmax_backward  # noqa: F401
import torch
import triton.testing
from kernels_cuda import softmax_backward as sb_fn  # noqa: F401

sb = sys.modules["kernels_cuda.softmax_backward"]
tag = sys.argv[1]
for shape, dtype in (
    ((4096, 32768), torch.bfloat16),
    ((4096, 32768), torch.float32),
    ((1024, 131072), torch.bfloat16),
    ((256, 262144), torch.bfloat16),
):
    y = torch.softmax(torch.randn(shape, device="cuda", dtype=torch.float32), -1).to(dtype)
    dy = torch.randn(shape, device="cuda", dtype=dtype)
    ref = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
    line = []
    for kb in (8, 16, 32, 64):
        sb.AUTO = replace(sb.BackwardConfig(), cluster_chunk_bytes=kb * 1024)
        sb._dense_calls.clear()
        sb._plan.cache_clear()
        dx = sb.softmax_backward(y, dy)
        err = (dx.double() - ref).abs().max().item()
        launch = sb._plan(
            "auto",
            shape[0],
            shape[1],
            str(dtype)[6:],
            16 // y.element_size(),
            sb.sm._device(0),
            sb.AUTO,
            True,
        )
        ms = triton.testing.do_bench(lambda: sb.softmax_backward(y, dy), warmup=50, rep=300)  # noqa: B023
        line.append(f"{kb}K C={launch.spec.cluster} {ms * 1e3:7.1f} us (err {err:.1e})")
    print(f"{tag} {shape[0]}x{shape[1]} {str(dtype)[6:]:9s} " + " | ".join(line), flush=True)
