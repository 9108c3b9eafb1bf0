# A probe: not part of any package.
"""kernels_triton.cluster's forward at other chunk widths and warps than the package's (8192
elements over 4 warps), at every row count: does a block of more warps, or a wider chunk (fewer
blocks a cluster, which also reaches 262144 columns in 16 blocks), move the long rows?

For each shape and dtype: kernels_triton.softmax (the dispatch) and each (CHUNK, warps) of the
cluster forward, launched as the package launches it (launch.direct_launcher with the cluster
metadata). Device time: triton.testing.do_bench median, L2 flushed; checked against float64."""

import itertools
import sys

import kernels_triton
import torch
import triton
import triton.testing
from kernels_triton import cluster, launch

SHAPES = [(256, 262144), (1024, 131072), (2048, 65536), (512, 65536), (4096, 32768), (16, 131072)]
CONFIGS = [(8192, 4), (8192, 8), (16384, 8), (16384, 16), (4096, 4), (4096, 2)]


def make(x, y, chunk, warps):
    m, n = x.shape
    c = triton.next_power_of_2(triton.cdiv(n, chunk))
    const = dict(C=c, CHUNK=chunk, NEEDS_MASK=n != c * chunk, COMPENSATED=x.dtype == torch.float32, VEC=0)
    compiled = cluster.cluster_fwd_kernel.warmup(
        x, y, n, x.stride(0), y.stride(0), 0, **const, grid=(1,), num_warps=warps, num_stages=1
    )
    compiled._init_handles()
    slot_base = -(-compiled.metadata.shared // 16) * 16
    shared = slot_base + c * 8
    plan = launch.direct_launcher(
        compiled, (m, 1, 1), 2, (n, x.stride(0), y.stride(0), slot_base, *const.values()), x.get_device(),
        packed_metadata=(warps, c, shared),
    )  # fmt: skip
    return plan, compiled, shared, c


def main():
    shapes = SHAPES
    if len(sys.argv) > 1:
        shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[1].split(",")]
    occupancy = triton.runtime.driver.active.utils.cuOccupancyMaxActiveClusters
    for (m, n), dtype in itertools.product(shapes, (torch.float32, torch.bfloat16)):
        x = (torch.randn((m, n), device="cuda") * 3).to(dtype)
        x[:, -1] += 5
        ref = torch.softmax(x.double(), -1)
        y = torch.empty_like(x)
        gb = 2 * x.numel() * x.element_size() / 1e9
        base = triton.testing.do_bench(lambda x=x: kernels_triton.softmax(x), return_mode="median")
        print(f"{m}x{n} {str(dtype)[6:]}: dispatch {base * 1e3:.1f} us {gb / base:.0f} GB/s", flush=True)
        for chunk, warps in CONFIGS:
            c = triton.next_power_of_2(triton.cdiv(n, chunk))
            if c > 16 or c < 2:
                continue
            try:
                plan, compiled, shared, c = make(x, y, chunk, warps)
                y.fill_(float("nan"))
                plan(x, y)
                torch.cuda.synchronize()
                err = (y.double() - ref).abs().max().item()
                ms = triton.testing.do_bench(lambda plan=plan, x=x, y=y: plan(x, y), return_mode="median")
                occ = occupancy(compiled.function, shared, c) if warps == 4 else -1
            except Exception as e:  # noqa: BLE001 - a probe: report and go on
                print(f"  CHUNK={chunk} w={warps}: {type(e).__name__} {str(e)[:120]}", flush=True)
                continue
            print(
                f"  CHUNK={chunk:5d} w={warps:2d} C={c:2d} regs={compiled.n_regs} spills={compiled.n_spills} "
                f"occ={occ} {ms * 1e3:7.1f} us {gb / ms:.0f} GB/s /dispatch {ms / base:.3f} err {err:.1e}",
                flush=True,
            )


if __name__ == "__main__":
    main()
