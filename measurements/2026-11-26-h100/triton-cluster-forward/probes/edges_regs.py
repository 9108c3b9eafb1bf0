# A probe: not part of any package.
"""The cluster forward with rows split into head, aligned body and tail (VEC > 0) against reading
them an element at a time (VEC = 0), both through launch.cluster_plan: registers and spills of the
compiled kernel (Triton 3.6 on this machine), device time (do_bench median, L2 flushed) and
back-to-back time with the L2 warm (wall per launch, 500 launches, one synchronize), best of two
rounds in turns."""

import time

import torch
import triton.testing
from kernels_triton import cluster, launch

packs = cluster._packs
for m, n in ((4, 50257), (8, 128257), (16, 100003), (64, 50257), (16, 131071)):
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn((m, n), device="cuda").to(dtype)
        y = torch.empty_like(x)
        out = {}
        for _ in range(2):
            for vec in (0, 1):
                cluster._packs = packs if vec else (lambda ts: 0)
                plan = launch.cluster_plan("fwd", [x, y], m, n, any_size=True)
                compiled, _, _, rest = cluster.compiled_launch("fwd", [x, y])
                d = triton.testing.do_bench(
                    lambda plan=plan, x=x, y=y: plan(x, y), warmup=20, rep=100, return_mode="median"
                )
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(500):
                    plan(x, y)
                torch.cuda.synchronize()
                w = (time.perf_counter() - t0) / 500 * 1e6
                key = f"VEC={rest[-1]}"
                old = out.get(key, (0, 0, 1e9, 1e9))
                out[key] = (compiled.n_regs, compiled.n_spills, min(old[2], d * 1e3), min(old[3], w))
        cluster._packs = packs
        print(
            f"{m}x{n} {str(dtype)[6:]:8s} "
            + " | ".join(
                f"{k}: {r}r {s}s device {d:6.2f} us warm {w:6.2f} us" for k, (r, s, d, w) in out.items()
            ),
            flush=True,
        )
