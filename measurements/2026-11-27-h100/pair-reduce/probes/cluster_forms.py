# A probe: not part of any package.
"""kernels_triton.cluster's forward in other block forms: the
chunk a block holds, its warps, a register cap, and whether it holds exp(x - m) across the
exchange (HOLD_EXPS), the rest of the launch as the package builds it (cluster.kernel_for,
launch.direct_launcher with the cluster metadata).

    cluster_forms.py SHAPES DTYPES FORMS [ROUNDS]
    e.g. cluster_forms.py 16x131072,32x65536 bfloat16 8192x4:0,8192x8:0,8192x8:1 3
    (a form: CHUNKxWARPS[xMAXNREG]:HOLD; the first form is the baseline of the ratios)

Device time: triton.testing.do_bench, L2 flushed, the forms in turns for ROUNDS rounds; each
round's median and its mean of the middle 80% of the calls, the median of the rounds of each.
(Run b printed the medians only. Its rounds of one form moved by about 0.6 us at 7-13 us, whole
rounds at a time; the trimmed mean was added in case the medians sat on steps of the event
timer, which they do not: the sweep's medians move by 32 ns.)
Each form's output is checked against float64 (largest error). (../few-rows/probes/cluster_forms.py
with THREADS, which cluster_fwd_kernel takes since 538a8c7, set from the form's warps.)"""

import sys

import torch
import triton
import triton.testing
from kernels_triton import cluster, launch


def median(values):
    return sorted(values)[len(values) // 2]


def trimmed_mean(values):
    kept = sorted(values)[len(values) // 10 : len(values) - len(values) // 10]
    return sum(kept) / len(kept)


def parse(form):
    shape, hold = form.split(":")
    chunk, warps, *cap = (int(v) for v in shape.split("x"))
    return chunk, warps, (cap[0] if cap else None), bool(int(hold))


def make(tensors, chunk, warps, maxnreg, hold):
    m, n = tensors[0].shape
    kernel, const, _, _ = cluster.kernel_for("fwd", n, tensors[0].dtype, cluster._packs(tensors))
    c = triton.next_power_of_2(triton.cdiv(n, chunk))
    const = dict(const, C=c, CHUNK=chunk, NEEDS_MASK=n != c * chunk, HOLD_EXPS=hold, THREADS=32 * warps)
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
    return plan, compiled, c


def main():
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[1].split(",")]
    dtypes = [getattr(torch, d) for d in sys.argv[2].split(",")]
    forms = sys.argv[3].split(",")
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    for m, n in shapes:
        for dtype in dtypes:
            x = (torch.randn((m, n), device="cuda") * 5).to(dtype)
            x[:, -1] = 40
            y = torch.empty_like(x)
            ref = torch.softmax(x.double(), -1)
            plans, notes, times = {}, {}, {}
            for form in forms:
                chunk, warps, maxnreg, hold = parse(form)
                c = triton.next_power_of_2(triton.cdiv(n, chunk))
                if not 2 <= c <= cluster.MAX_CLUSTER:
                    continue
                plans[form], compiled, c = make([x, y], chunk, warps, maxnreg, hold)
                y.fill_(float("nan"))
                plans[form](x, y)
                torch.cuda.synchronize()
                err = (y.double() - ref).abs().max().item()
                notes[form] = f"C={c} regs={compiled.n_regs} spills={compiled.n_spills} err={err:.1e}"
                times[form] = []
            for _ in range(rounds):
                for form, plan in plans.items():
                    calls = triton.testing.do_bench(lambda p=plan, x=x, y=y: p(x, y), return_mode="all")
                    times[form].append((median(calls) * 1e3, trimmed_mean(calls) * 1e3))
            gb = 2 * x.numel() * x.element_size() / 1e3
            base = None
            print(f"fwd {m}x{n} {str(dtype)[6:]}", flush=True)
            for form, ts in times.items():
                t_median = median([t for t, _ in ts])
                t = median([t for _, t in ts])
                base = base or t
                print(
                    f"  {form:>14} {t:8.2f} us {gb / t:7.0f} GB/s /first {t / base:.3f} (median {t_median:.2f})"
                    f"  {notes[form]}  rounds {' '.join(f'{v:.2f}' for _, v in ts)}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
