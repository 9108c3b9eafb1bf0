# A probe: not part of any package.
"""kernels_triton.cluster's forward with HOLD_EXPS on and off, the rest of the launch as the
package builds it (cluster.kernel_for, launch.direct_launcher with the cluster metadata): is
exp(x - m) held across the exchange, one multiply an element after it, faster than x held and
the exponential taken again, and by how much at launches of one wave?

    hold_exps.py SHAPES DTYPES [ROUNDS]     e.g. hold_exps.py 16x131072,1024x131072 float32,bfloat16 3

Device time: triton.testing.do_bench median, L2 flushed, the two forms in turns for ROUNDS
rounds. Error: the largest absolute error against float64, beside torch.softmax's."""

import sys

import torch
import triton
import triton.testing
from kernels_triton import cluster, launch


def make(tensors, hold):
    m, n = tensors[0].shape
    kernel, const, warps, maxnreg = cluster.kernel_for("fwd", n, tensors[0].dtype, cluster._packs(tensors))
    const = dict(const, HOLD_EXPS=hold)
    c = const["C"]
    strides = [t.stride(0) for t in tensors]
    cap = {} if maxnreg is None else {"maxnreg": maxnreg}
    compiled = kernel.warmup(
        *tensors, n, *strides, 0, **const, grid=(1,), num_warps=warps, num_stages=1, **cap
    )
    compiled._init_handles()
    slot_base = -(-compiled.metadata.shared // 16) * 16
    plan = launch.direct_launcher(
        compiled, (m, 1, 1), len(tensors), (n, *strides, slot_base, *const.values()), tensors[0].get_device(),
        packed_metadata=(warps, c, slot_base + 8 + 8 * c),
    )  # fmt: skip
    return plan, compiled


def main():
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[1].split(",")]
    dtypes = [getattr(torch, d) for d in sys.argv[2].split(",")]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    for m, n in shapes:
        for dtype in dtypes:
            x = (torch.randn((m, n), device="cuda") * 5).to(dtype)
            x[:, -1] = 40
            y = torch.empty_like(x)
            ref = torch.softmax(x.double(), -1)
            torch_err = (torch.softmax(x, -1).double() - ref).abs().max().item()
            plans, times, errs = {}, {False: [], True: []}, {}
            for hold in (False, True):
                plans[hold], compiled = make([x, y], hold)
                y.fill_(float("nan"))
                plans[hold](x, y)
                torch.cuda.synchronize()
                errs[hold] = ((y.double() - ref).abs().max().item(), compiled.n_regs, compiled.n_spills)
            for _ in range(rounds):
                for hold in (False, True):
                    times[hold].append(
                        triton.testing.do_bench(lambda p=plans[hold], x=x, y=y: p(x, y), return_mode="median")
                        * 1e3
                    )
            t0, t1 = (sorted(times[h])[len(times[h]) // 2] for h in (False, True))
            gb = 2 * x.numel() * x.element_size() / 1e3
            print(
                f"fwd {m}x{n} {str(dtype)[6:]}: x held {t0:7.2f} us ({gb / t0:.2f} GB/s, regs {errs[False][1]}, "
                f"spills {errs[False][2]}, err {errs[False][0]:.1e}) | exps held {t1:7.2f} us ({gb / t1:.2f} GB/s, "
                f"regs {errs[True][1]}, spills {errs[True][2]}, err {errs[True][0]:.1e}) | held/x {t1 / t0:.3f} "
                f"| torch err {torch_err:.1e} | rounds x {' '.join(f'{t:.2f}' for t in times[False])} "
                f"e {' '.join(f'{t:.2f}' for t in times[True])}",
                flush=True,
            )


if __name__ == "__main__":
    main()
