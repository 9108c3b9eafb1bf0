# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/cuda-cluster-copies/README.md), run from the repository root as .probes/cluster_rows.py.
# ruff: noqa: E741, B023, F401 -- kept as it ran
"""Device time per row of kernels_cuda's 04 cluster forward (and the cp.async probe copy 04c) at
N = 262144 bf16, 16-block clusters of 32 KB chunks, over row counts around 256: whether the last,
partly filled wave of clusters shows (time per row falling where the rows fill whole waves).
Also asks the driver how many such clusters fit at once. labtools.bench.time_cuda: L2 cold,
median."""

from pathlib import Path

import torch
from kernels_cuda import arrays, codegen
from kernels_cuda import softmax_variants as variants
from labtools.bench import l2_bytes, n_input_sets, time_cuda

codegen.SOURCE_DIR = Path(".probes/cuda").resolve()
codegen._headers.cache_clear()
device_id = torch.cuda.current_device()
N, dtype = 262144, "bfloat16"
vec = variants.full_vec(dtype)
for source in ("04_softmax_cluster.cu", "04c_softmax_cluster_cpasync.cu"):
    for c, threads in ((16, 256), (8, 256)):
        chunk = N // c
        spec = variants.Spec(
            source, "softmax_cluster", dtype, (("CLUSTER", c), ("THREADS", threads), ("VEC", vec))
        )
        line = []
        for M in (48, 96, 144, 192, 224, 240, 256, 272, 288, 320):
            launch = variants.Launch(spec, grid=c * M, block=threads, shared_mem=chunk * 2, extra=(chunk,))
            nbytes = 2 * M * N * 2
            sets = []
            for k in range(n_input_sets(nbytes, l2_bytes())):
                g = torch.Generator(device="cuda").manual_seed(k)
                x = torch.randn((M, N), generator=g, device="cuda").to(torch.bfloat16)
                sets.append((x, torch.empty_like(x)))
            stream = arrays._TorchOps.stream(sets[0][0])

            def run(x, y, launch=launch, stream=stream):
                variants.run_launch(
                    launch,
                    arrays.as_rows(arrays._TorchOps, x),
                    arrays.as_rows(arrays._TorchOps, y),
                    device_id,
                    stream,
                )

            us = time_cuda(run, sets, time_cap_s=0.2).median_us
            line.append(f"M={M} {us:6.1f} us {us / M * 1000:5.0f} ns/row")
            del sets
        print(f"{source[:3]} C={c} T={threads}: " + " | ".join(line), flush=True)
