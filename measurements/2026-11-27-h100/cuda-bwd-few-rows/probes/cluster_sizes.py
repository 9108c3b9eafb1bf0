# A probe: not part of any package.
"""kernels_cuda's cluster backward (07) at launches of few rows in other cluster sizes than auto's
(BackwardConfig.cluster_size, 8): does a row over 16 blocks, half the chunk a block, finish a
launch of one wave sooner?

    cluster_sizes.py SHAPES DTYPES SIZES [ROUNDS]   e.g. cluster_sizes.py 16x131072 float32 8,16 5

Each size's launch is planned as auto plans it with that cluster_size (softmax_backward.plan,
variant "cluster") and launched through the package's packed launch. Device time:
triton.testing.do_bench, L2 flushed, the sizes in turns, each round's mean of the middle 80% of
its calls, the median of the rounds. Checked against float64 (largest error)."""

import sys
from dataclasses import replace

import torch
import triton.testing
from kernels_cuda import softmax_backward as sb
from kernels_cuda import softmax_variants as sm

DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}


def trimmed_mean(values):
    kept = sorted(values)[len(values) // 10 : len(values) - len(values) // 10]
    return sum(kept) / len(kept)


def main():
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[1].split(",")]
    dtypes = [getattr(torch, d) for d in sys.argv[2].split(",")]
    sizes = [int(c) for c in sys.argv[3].split(",")]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    device = sm._device(torch.cuda.current_device())
    stream = torch.cuda.current_stream().cuda_stream
    for m, n in shapes:
        for dtype in dtypes:
            y = torch.softmax(torch.randn((m, n), device="cuda") * 3, -1).to(dtype)
            dy = torch.randn_like(y)
            dx = torch.empty_like(y)
            yd, dyd = y.double(), dy.double()
            ref = yd * (dyd - (yd * dyd).sum(-1, keepdim=True))
            vec = sm.full_vec(DTYPES[dtype])
            runs, notes, times = {}, {}, {}
            for c in sizes:
                cfg = replace(sb.AUTO, cluster_size=c)
                launch = sb.plan("cluster", m, n, DTYPES[dtype], vec, device, cfg, True)
                run = sb._packed(launch, y.get_device(), m, n, (n, n, n))
                dx.fill_(float("nan"))
                run(stream, y.data_ptr(), dy.data_ptr(), dx.data_ptr())
                torch.cuda.synchronize()
                err = (dx.double() - ref).abs().max().item()
                constants = dict(launch.spec.constants)
                notes[c] = (
                    f"C={constants.get('CLUSTER')} dy_packs={constants.get('DY_PACKS', 0)} grid {launch.grid} "
                    f"shared {launch.shared_mem} err {err:.1e}"
                )
                runs[c], times[c] = run, []
            ptrs = (y.data_ptr(), dy.data_ptr(), dx.data_ptr())
            for _ in range(rounds):
                for c, run in runs.items():
                    calls = triton.testing.do_bench(
                        lambda run=run, ptrs=ptrs: run(stream, *ptrs),
                        return_mode="all",
                    )
                    times[c].append(trimmed_mean(calls) * 1e3)
            gb = 3 * y.numel() * y.element_size() / 1e3
            print(f"bwd {m}x{n} {DTYPES[dtype]}", flush=True)
            base = None
            for c, ts in times.items():
                t = sorted(ts)[len(ts) // 2]
                base = base or t
                print(
                    f"  cluster_size {c:2d}: {t:8.2f} us {gb / t:6.0f} GB/s /first {t / base:.3f}  {notes[c]}"
                    f"  rounds {' '.join(f'{v:.2f}' for v in ts)}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
