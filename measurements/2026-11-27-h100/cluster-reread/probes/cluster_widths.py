# A probe: not part of any package.
"""kernels_triton.cluster's kernels at other chunk widths and warps than the package's (8192
elements over 4 warps), at every row count: does a block of more warps, or a wider chunk (fewer
blocks a cluster, which also reaches 262144 columns in 16 blocks), move the long rows?

    cluster_widths.py [SHAPES [CONFIGS [DTYPES [DIRECTION]]]]
    e.g. cluster_widths.py 1024x131072,256x262144 8192x4,16384x8,16384x8x80 bfloat16 bwd
    (CHUNKxWARPS[xMAXNREG]: a cap on the registers a thread, Triton's maxnreg)

For each shape and dtype: kernels_triton's dispatch (softmax, or softmax_backward) and each
(CHUNK, warps) of the cluster kernel, launched as the package launches it (launch.direct_launcher
with the cluster metadata; from the tree where cluster.py exchanges by st.async, the inbox's
shared memory as its compiled_launch asks). Device time:
triton.testing.do_bench median, L2 flushed; checked against float64."""

import itertools
import sys

import kernels_triton
import torch
import triton
import triton.testing
from kernels_triton import cluster, launch

SHAPES = "256x262144,1024x131072,2048x65536,512x65536,4096x32768,16x131072"
CONFIGS = "8192x4,8192x8,16384x8,16384x16,4096x4,4096x2"


def make(tensors, chunk, warps, direction, maxnreg=None):
    m, n = tensors[0].shape
    c = triton.next_power_of_2(triton.cdiv(n, chunk))
    if direction == "fwd":
        kernel = cluster.cluster_fwd_kernel
        const = dict(
            C=c, CHUNK=chunk, NEEDS_MASK=n != c * chunk, COMPENSATED=tensors[0].dtype == torch.float32, VEC=0
        )
    else:
        kernel = cluster.cluster_bwd_kernel
        const = dict(C=c, CHUNK=chunk, VEC=0)
    strides = [t.stride(0) for t in tensors]
    limit = {} if maxnreg is None else {"maxnreg": maxnreg}
    compiled = kernel.warmup(
        *tensors, n, *strides, 0, **const, grid=(1,), num_warps=warps, num_stages=1, **limit
    )
    compiled._init_handles()
    slot_base = -(-compiled.metadata.shared // 16) * 16
    shared = slot_base + 8 + 8 * c  # the exchange's mbarrier and C pairs (cluster._exchange)
    plan = launch.direct_launcher(
        compiled, (m, 1, 1), len(tensors), (n, *strides, slot_base, *const.values()), tensors[0].get_device(),
        packed_metadata=(warps, c, shared),
    )  # fmt: skip
    return plan, compiled, shared, c


def main():
    args = sys.argv[1:] + [None] * 4
    shapes = [tuple(int(v) for v in s.split("x")) for s in (args[0] or SHAPES).split(",")]
    configs = [tuple(int(v) for v in s.split("x")) for s in (args[1] or CONFIGS).split(",")]
    dtypes = [getattr(torch, d) for d in (args[2] or "float32,bfloat16").split(",")]
    direction = args[3] or "fwd"
    for (m, n), dtype in itertools.product(shapes, dtypes):
        x = (torch.randn((m, n), device="cuda") * 3).to(dtype)
        x[:, -1] += 5
        if direction == "fwd":
            tensors = [x, torch.empty_like(x)]
            ref = torch.softmax(x.double(), -1)
            base = triton.testing.do_bench(lambda x=x: kernels_triton.softmax(x), return_mode="median")
            gb = 2 * x.numel() * x.element_size() / 1e9
        else:
            y = torch.softmax(x.float(), -1).to(dtype)
            dy = torch.randn_like(y)
            tensors = [y, dy, torch.empty_like(y)]
            yd, dyd = y.double(), dy.double()
            ref = yd * (dyd - (yd * dyd).sum(-1, keepdim=True))
            base = triton.testing.do_bench(
                lambda y=y, dy=dy: kernels_triton.softmax_backward(y, dy), return_mode="median"
            )
            gb = 3 * x.numel() * x.element_size() / 1e9
        out = tensors[-1]
        print(
            f"{direction} {m}x{n} {str(dtype)[6:]}: dispatch {base * 1e3:.1f} us {gb / base:.0f} TB/s",
            flush=True,
        )
        for chunk, warps, *maxnreg in configs:
            c = triton.next_power_of_2(triton.cdiv(n, chunk))
            if c > 16 or c < 2:
                continue
            try:
                plan, compiled, shared, c = make(tensors, chunk, warps, direction, *maxnreg)
                out.fill_(float("nan"))
                plan(*tensors)
                torch.cuda.synchronize()
                err = (out.double() - ref).abs().max().item()
                ms = triton.testing.do_bench(lambda plan=plan, ts=tensors: plan(*ts), return_mode="median")
            except Exception as e:  # noqa: BLE001 - a probe: report and go on
                print(f"  CHUNK={chunk} w={warps}: {type(e).__name__} {str(e)[:120]}", flush=True)
                continue
            print(
                f"  CHUNK={chunk:5d} w={warps:2d} C={c:2d} maxnreg={maxnreg} regs={compiled.n_regs} spills={compiled.n_spills} "
                f"{ms * 1e3:7.1f} us {gb / ms:.2f} TB/s /dispatch {ms / base:.3f} err {err:.1e}",
                flush=True,
            )


if __name__ == "__main__":
    main()
