# A probe: not part of any package.
# ruff: noqa: B023 -- every lambda here is called within the iteration that made it
"""kernels_cuda's cluster forward (04) with other block widths and chunk sizes: the package's
launch with `softmax_variants.CLUSTER_THREADS` (256) and `AutoConfig.long_row_chunk_bytes`
(16 KB) set per form, everything else as the package plans it.

    cluster_threads.py SHAPES DTYPES FORMS [ROUNDS]
    e.g. cluster_threads.py 16x131072,256x262144 bfloat16 256:16,128:16,512:16 5
    (a form: THREADS:LONG_ROW_CHUNK_KB; the first form is the baseline of the ratios)

Device time: triton.testing.do_bench (L2 flushed by a write, as the sweep's), the forms in
turns for ROUNDS rounds; each round's trimmed mean (middle 80% of the calls), the median and the
least of the rounds. Each form's output is checked against float64 (largest error beside
torch's), and its plan (cluster size, chunk, threads) printed."""

import sys

import torch
import triton.testing
from kernels_cuda import softmax_variants as sv


def trimmed_mean(values):
    kept = sorted(values)[len(values) // 10 : len(values) - len(values) // 10]
    return sum(kept) / len(kept)


def use(form):
    threads, chunk_kb = (int(v) for v in form.split(":"))
    sv.CLUSTER_THREADS = threads
    sv.set_auto_config(long_row_chunk_bytes=chunk_kb * 1024)  # clears the plan and call caches


def main():
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[1].split(",")]
    dtypes = [getattr(torch, d) for d in sys.argv[2].split(",")]
    forms = sys.argv[3].split(",")
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    for m, n in shapes:
        for dtype in dtypes:
            x = (torch.randn((m, n), device="cuda") * 5).to(dtype)
            x[::3, 0] = 40
            x[1::3, -1] = 40
            out = torch.empty_like(x)
            ref = torch.softmax(x.double(), -1)
            torch_err = (torch.softmax(x, -1).double() - ref).abs().max().item()
            notes, times = {}, {form: [] for form in forms}
            for form in forms:
                use(form)
                launch = sv.plan("auto", m, n, str(dtype)[6:], sv.full_vec(str(dtype)[6:]), sv._device(0))
                out.fill_(float("nan"))
                sv.softmax(x, out=out)
                torch.cuda.synchronize()
                err = (out.double() - ref).abs().max().item()
                notes[form] = (
                    f"{launch.spec.kernel} C={launch.spec.cluster} chunk={launch.extra} block={launch.block}"
                    f" err {err:.1e} (torch {torch_err:.1e})"
                )
            for _ in range(rounds):
                for form in forms:
                    use(form)
                    sv.softmax(x, out=out)  # compiled and cached before timing
                    calls = triton.testing.do_bench(lambda: sv.softmax(x, out=out), return_mode="all")
                    times[form].append(trimmed_mean(calls) * 1e3)
            gb = 2 * x.numel() * x.element_size() / 1e3
            first = None
            print(f"fwd {m}x{n} {str(dtype)[6:]}", flush=True)
            for form, ts in times.items():
                t = sorted(ts)[len(ts) // 2]
                first = first or t
                print(
                    f"  {form:>7} {t:8.2f} us (least {min(ts):8.2f}) {gb / t:7.0f} GB/s /first {t / first:.3f}"
                    f"  {notes[form]}  rounds {' '.join(f'{v:.2f}' for v in ts)}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
