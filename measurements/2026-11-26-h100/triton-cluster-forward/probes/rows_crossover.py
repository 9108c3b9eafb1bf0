# A probe: not part of any package.
"""Where the forward over thread-block clusters (kernels_triton.cluster) stops paying, by row count.

For each shape, kernels_triton.softmax twice in turns: "other" with the cluster forward switched
off (the dispatch's split-row or one-program-a-row kernel), "cluster" with it taken at any row
count (cluster.forward_may_apply and forward_fits patched to take every shape of 32768-131072
columns). Device time: triton.testing.do_bench medians, L2 flushed; call time: wall per call of
kernels_triton.softmax(x), 300 back to back after a synchronize, the least of the rounds; best of
two rounds for each. Also printed: the driver's count of co-resident clusters for the compiled
kernel (occ) and the waves ceil(M / occ). The cluster's output is checked against float64."""

import math
import time

import kernels_triton
import torch
import triton
import triton.testing
from kernels_triton import cluster, launch

SHAPES = [
    (1, 131072), (4, 50257), (8, 128257), (16, 131072), (32, 65536), (64, 50257), (128, 50257),
    (256, 50257), (512, 50257), (64, 65536), (128, 65536), (256, 65536), (512, 65536), (64, 131072),
    (128, 131072), (256, 131072), (64, 32768), (128, 32768), (256, 32768),
]  # fmt: skip
may_apply, fits = cluster.forward_may_apply, cluster.forward_fits


def mode(use_cluster: bool) -> None:
    cluster.forward_may_apply = cluster._takes if use_cluster else (lambda *a: False)
    cluster.forward_fits = (lambda *a: True) if use_cluster else fits
    launch.forget_plans()


def call_us(x) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(300):
        kernels_triton.softmax(x)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / 300 * 1e6


if __name__ == "__main__":
    occupancy = triton.runtime.driver.active.utils.cuOccupancyMaxActiveClusters
    for m, n in SHAPES:
        for dtype in (torch.float32, torch.bfloat16):
            x = (torch.randn((m, n), device="cuda") * 3).to(dtype)
            x[:, -1] += 5
            compiled, packed, _, _ = cluster.compiled_launch("fwd", [x, torch.empty_like(x)])
            compiled._init_handles()
            occ = occupancy(compiled.function, packed[2], packed[1])
            mode(True)
            y = kernels_triton.softmax(x)
            err = (y.double() - torch.softmax(x.double(), -1)).abs().max().item()
            dev, call = {}, {}
            for _ in range(2):
                for name in ("other", "cluster"):
                    mode(name == "cluster")
                    kernels_triton.softmax(x)
                    d = triton.testing.do_bench(
                        lambda x=x: kernels_triton.softmax(x), warmup=20, rep=100, return_mode="median"
                    )
                    dev[name] = min(dev.get(name, math.inf), d * 1e3)
                    c = min(call_us(x) for _ in range(3))
                    call[name] = min(call.get(name, math.inf), c)
            print(
                f"{m}x{n} {str(dtype)[6:]:8s} C{packed[1]} {compiled.n_regs}r occ {occ} waves {math.ceil(m / occ)}"
                f" | device other {dev['other']:7.2f} cluster {dev['cluster']:7.2f} c/o {dev['cluster'] / dev['other']:.3f}"
                f" | call other {call['other']:7.2f} cluster {call['cluster']:7.2f} c/o {call['cluster'] / call['other']:.3f}"
                f" | err {err:.2g}",
                flush=True,
            )
    cluster.forward_may_apply, cluster.forward_fits = may_apply, fits
