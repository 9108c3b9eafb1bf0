# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/cuda-cluster-copies/README.md), run from the repository root as .probes/cluster_occupancy.py.
# ruff: noqa: E741, B023, F401 -- kept as it ran
"""Device time of kernels_cuda's 04 cluster forward (and the cp.async probe copy 04c) with fewer
blocks an SM than shared memory allows: the launch asks for more dynamic shared memory than the
chunk needs, so that k blocks fit an SM. Fewer rows in flight make each row's lifetime shorter,
and with it the start (reads only) and the end (writes only) of the kernel. labtools.bench.time_cuda:
L2 cold, inputs rotated, median; the variants of a shape alternate over two rounds."""

from pathlib import Path

import torch
from kernels_cuda import arrays, codegen
from kernels_cuda import softmax_variants as variants
from labtools.bench import l2_bytes, n_input_sets, time_cuda
from labtools.ceilings import measure_copy
from labtools.ops import softmax_ref

codegen.SOURCE_DIR = Path(".probes/cuda").resolve()
codegen._headers.cache_clear()
device_id = torch.cuda.current_device()
SHARED_PER_SM = torch.cuda.get_device_properties(device_id).shared_memory_per_multiprocessor
RESERVED = 1024 + 512  # a block's reserved shared memory and the kernel's static shared memory, rounded up


def padded(k: int) -> int:
    return (SHARED_PER_SM // k - RESERVED) // 128 * 128


CASES = [  # (M, N), dtype, cluster, threads, blocks an SM to try
    ((256, 262144), "bfloat16", 16, 256, (None, 5, 4, 3, 2)),
    ((256, 262144), "bfloat16", 8, 256, (None, 2)),
    ((1024, 131072), "bfloat16", 16, 256, (None, 6, 4, 3, 2)),
    ((1024, 131072), "bfloat16", 4, 256, (None, 2)),
    ((256, 262144), "float32", 16, 256, (None, 2)),
    ((1024, 131072), "float32", 8, 512, (None, 2)),
    ((4096, 32768), "bfloat16", 4, 256, (None, 6, 4, 3)),
    ((4096, 32768), "float32", 4, 256, (None, 4, 3, 2)),
]
copy = measure_copy()
print(f"copy {copy:.1f} GB/s; shared memory an SM {SHARED_PER_SM} B", flush=True)
for (M, N), dtype, c, threads, ks in CASES:
    vec = variants.full_vec(dtype)
    size = arrays.ITEMSIZE[dtype]
    chunk = N // c
    cands = {}
    for source in ("04_softmax_cluster.cu", "04c_softmax_cluster_cpasync.cu"):
        spec = variants.Spec(
            source, "softmax_cluster", dtype, (("CLUSTER", c), ("THREADS", threads), ("VEC", vec))
        )
        for k in ks:
            shared = chunk * size if k is None else padded(k)
            if shared < chunk * size:
                continue
            cands[f"{source[:3]} C={c} T={threads} k={k or 'max'}"] = variants.Launch(
                spec, grid=c * M, block=threads, shared_mem=shared, extra=(chunk,)
            )
    codegen.compile_all(
        [codegen.device_arch(device_id)], specs=list(dict.fromkeys(l.spec for l in cands.values()))
    )
    nbytes = 2 * M * N * size
    sets = []
    for k in range(n_input_sets(nbytes, l2_bytes())):
        g = torch.Generator(device="cuda").manual_seed(k)
        x = torch.randn((M, N), generator=g, device="cuda").to(getattr(torch, dtype))
        sets.append((x, torch.empty_like(x)))
    stream = arrays._TorchOps.stream(sets[0][0])
    runs, errs, times = {}, {}, {name: [] for name in cands}
    for name, l in cands.items():

        def run(x, y, l=l):
            variants.run_launch(
                l, arrays.as_rows(arrays._TorchOps, x), arrays.as_rows(arrays._TorchOps, y), device_id, stream
            )

        runs[name] = run
        x, y = sets[0]
        y.fill_(float("nan"))
        run(x, y)
        rows = [0, M // 2, M - 1]
        errs[name] = float(
            abs(y[rows].double().cpu().numpy() - softmax_ref(x[rows].double().cpu().numpy())).max()
        )
    for _ in range(2):
        for name in cands:
            times[name].append(time_cuda(runs[name], sets, time_cap_s=0.3).median_us)
    base = min(times[next(iter(cands))])
    for name in cands:
        t = min(times[name])
        print(
            f"{M}x{N} {dtype:8s} {name:26s} shared {cands[name].shared_mem:6d} {t:7.1f} us "
            f"({'/'.join(f'{v:.1f}' for v in times[name])}) {nbytes / t / 1e3 / copy:6.1%} of copy x{t / base:.3f} err {errs[name]:.1e}",
            flush=True,
        )
    del sets
    torch.cuda.empty_cache()
