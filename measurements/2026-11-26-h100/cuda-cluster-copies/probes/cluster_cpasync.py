# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/cuda-cluster-copies/README.md), run from the repository root as .probes/cluster_cpasync.py.
# ruff: noqa: E741, B023, F401 -- kept as it ran
"""Device time of kernels_cuda's 04 cluster forward against a probe copy of it, built from
.probes/cuda/ (the package's sources plus the copy): 04c loads the chunk into shared memory with
per-thread cp.async (16 bytes an instruction, every thread's packs in flight at once) instead of
one bulk copy issued by one thread and completing on an mbarrier. labtools.bench.time_cuda: L2 cold, inputs
rotated, median; the candidates of a shape alternate over two rounds."""

import math
import sys
from pathlib import Path

import torch
from kernels_cuda import arrays, codegen
from kernels_cuda import softmax_variants as variants
from labtools.bench import l2_bytes, n_input_sets, time_cuda
from labtools.ceilings import measure_copy
from labtools.ops import softmax_ref

codegen.SOURCE_DIR = Path(".probes/cuda").resolve()
codegen._headers.cache_clear()

CASES = [
    ((256, 262144), "bfloat16", [(16, 256), (8, 256), (8, 512), (16, 128)]),
    ((1024, 131072), "bfloat16", [(4, 512), (4, 256), (8, 256), (16, 256)]),
    ((256, 262144), "float32", [(16, 256), (16, 512)]),
    ((1024, 131072), "float32", [(8, 256), (8, 512)]),
    ((4096, 32768), "bfloat16", [(2, 256), (4, 256)]),
    ((4096, 32768), "float32", [(2, 512), (4, 256)]),
]


def launch(source, kernel, dtype, c, threads, M, N, extra=()):
    vec = variants.full_vec(dtype)
    chunk = N // c
    consts = (("CLUSTER", c), ("THREADS", threads), ("VEC", vec), *extra)
    spec = variants.Spec(source, kernel, dtype, consts)
    return variants.Launch(
        spec, grid=c * M, block=threads, shared_mem=chunk * arrays.ITEMSIZE[dtype], extra=(chunk,)
    )


device_id = torch.cuda.current_device()
copy = measure_copy()
print(f"copy {copy:.1f} GB/s", flush=True)
for (M, N), dtype, shapes in CASES:
    vec = variants.full_vec(dtype)
    cands = {}
    for c, threads in shapes:
        items = N // c // vec // threads
        cands[f"04 C={c} T={threads}"] = launch(
            "04_softmax_cluster.cu", "softmax_cluster", dtype, c, threads, M, N
        )
        cands[f"04c C={c} T={threads}"] = launch(
            "04c_softmax_cluster_cpasync.cu", "softmax_cluster", dtype, c, threads, M, N
        )
    arch = codegen.device_arch(device_id)
    compiled = codegen.compile_all([arch], specs=list(dict.fromkeys(l.spec for l in cands.values())))
    regs = {
        c.spec: (c.resources.registers, c.resources.spill_bytes) if c.resources else None for c in compiled
    }
    nbytes = 2 * M * N * arrays.ITEMSIZE[dtype]
    sets = []
    for k in range(n_input_sets(nbytes, l2_bytes())):
        g = torch.Generator(device="cuda").manual_seed(k)
        x = torch.randn((M, N), generator=g, device="cuda").to(getattr(torch, dtype))
        sets.append((x, torch.empty_like(x)))
    stream = arrays._TorchOps.stream(sets[0][0])
    times = {name: [] for name in cands}
    errs = {}
    for name, l in cands.items():

        def run(x, y, l=l):
            variants.run_launch(
                l, arrays.as_rows(arrays._TorchOps, x), arrays.as_rows(arrays._TorchOps, y), device_id, stream
            )

        x, y = sets[0]
        y.fill_(math.nan)
        run(x, y)
        rows = [0, M // 2, M - 1]
        ref = softmax_ref(x[rows].double().cpu().numpy())
        errs[name] = float(abs(y[rows].double().cpu().numpy() - ref).max())
    for _ in range(2):
        for name, l in cands.items():

            def run(x, y, l=l):
                variants.run_launch(
                    l,
                    arrays.as_rows(arrays._TorchOps, x),
                    arrays.as_rows(arrays._TorchOps, y),
                    device_id,
                    stream,
                )

            times[name].append(time_cuda(run, sets, time_cap_s=0.3).median_us)
    base = min(times[next(iter(cands))])
    for name, l in cands.items():
        t = min(times[name])
        print(
            f"{M}x{N} {dtype:8s} {name:28s} {t:7.1f} us ({'/'.join(f'{v:.1f}' for v in times[name])}) "
            f"{nbytes / t / 1e3 / copy:6.1%} of copy  x{t / base:.3f}  regs/spill {regs.get(l.spec)}  err {errs[name]:.1e}",
            flush=True,
        )
    del sets
    torch.cuda.empty_cache()
