# A probe: not part of any package.
# ruff: noqa: B023 -- every lambda here is called within the iteration that made it
"""kernels_cuda's cluster forward (04) with its chunk held in registers (KL_ITEMS > 0: each thread
ITEMS packs, no shared memory for the chunk) against the package's plan (the chunk copied into
shared memory), at the cluster size and chunk the package plans for the shape.

    cluster_held.py SHAPES DTYPES [ROUNDS]

Device time: triton.testing.do_bench (L2 flushed by a write, as the sweep's), the two forms in
turns for ROUNDS rounds; each round's trimmed mean (middle 80% of the calls), the median and the
least of the rounds. Each form's output is checked against float64 (largest error beside
torch's), after the output is filled with NaN."""

import dataclasses
import math
import sys

import torch
import triton.testing
from kernels_cuda import arrays, codegen
from kernels_cuda import softmax_variants as sv


def trimmed_mean(values):
    kept = sorted(values)[len(values) // 10 : len(values) - len(values) // 10]
    return sum(kept) / len(kept)


def main():
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[1].split(",")]
    dtypes = sys.argv[2].split(",")
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    device = sv._device(0)
    stream = torch.cuda.current_stream().cuda_stream
    for m, n in shapes:
        for dtype in dtypes:
            x = (torch.randn((m, n), device="cuda") * 5).to(getattr(torch, dtype))
            x[::3, 0] = 40
            x[1::3, -1] = 40
            out = torch.empty_like(x)
            ref = torch.softmax(x.double(), -1)
            torch_err = (torch.softmax(x, -1).double() - ref).abs().max().item()
            base = sv.plan("auto", m, n, dtype, sv.full_vec(dtype), device)
            if base.spec.kernel != "softmax_cluster":
                print(f"fwd {m}x{n} {dtype}: the package plans {base.spec.name}, not 04", flush=True)
                continue
            cluster, chunk = base.spec.cluster, base.extra[0]
            items = math.ceil(chunk // sv.full_vec(dtype) / sv.CLUSTER_THREADS)
            held = dataclasses.replace(base, spec=sv.cluster_spec(dtype, cluster, items), shared_mem=0)
            xr, yr = arrays.Rows(x, m, n, x.data_ptr(), n), arrays.Rows(out, m, n, out.data_ptr(), n)
            forms = {"shared": base, f"held{items}": held}
            runs, notes = {}, {}
            for form, launch in forms.items():
                fn = lambda launch=launch: sv.run_launch(launch, xr, yr, 0, stream)
                out.fill_(float("nan"))
                fn()
                torch.cuda.synchronize()
                res = codegen.compile_spec(launch.spec, codegen.device_arch(0)).resources
                err = (out.double() - ref).abs().max().item()
                notes[form] = (
                    f"C={cluster} chunk={chunk} regs={res.registers} err {err:.1e} (torch {torch_err:.1e})"
                )
                runs[form] = fn
            times = {form: [] for form in runs}
            for _ in range(rounds):
                for form, fn in runs.items():
                    times[form].append(trimmed_mean(triton.testing.do_bench(fn, return_mode="all")) * 1e3)
            gb = 2 * x.numel() * x.element_size() / 1e3
            first = None
            print(f"fwd {m}x{n} {dtype}", flush=True)
            for form, ts in times.items():
                t = sorted(ts)[len(ts) // 2]
                first = first or t
                print(
                    f"  {form:>8} {t:8.2f} us (least {min(ts):8.2f}) {gb / t:7.0f} GB/s /shared {t / first:.3f}"
                    f"  {notes[form]}  rounds {' '.join(f'{v:.2f}' for v in ts)}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
