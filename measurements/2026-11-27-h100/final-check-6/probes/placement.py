# A probe: not part of any package.
# ruff: noqa: B023 -- every lambda here is called within the iteration that made it
"""QuACK's and kernels_cuda's softmax forward writing into the same output buffer, with x and y
at several distances from each other in one allocation: does the ratio between the two depend on
where y lies relative to x?

    placement.py SHAPES DTYPES [ROUNDS]
    e.g. placement.py 8192x8192,16384x4096 bfloat16 3

For each shape: x at the start of one allocation and y at x's end plus a gap (0, 2 KiB, 64 KiB,
1 MiB, 32 MiB + 4 KiB), and x, y from torch.empty_like (the sweep's case). Both write into y
(QuACK's `_softmax_fwd(x, out)`, kernels_cuda's `softmax(x, out=y)`), in turns, ROUNDS rounds,
triton.testing.do_bench (L2 flushed by a write), each round's trimmed mean, median of rounds."""

import sys

import torch
import triton.testing
from kernels_cuda import softmax as cuda_softmax
from quack.softmax import _softmax_fwd as quack_softmax_fwd

GAPS = (0, 2 << 10, 64 << 10, 1 << 20, (32 << 20) + (4 << 10))


def trimmed_mean(values):
    kept = sorted(values)[len(values) // 10 : len(values) - len(values) // 10]
    return sum(kept) / len(kept)


def placements(m, n, dtype):
    """(label, x, y) with x filled with the same random values in every placement."""
    src = torch.randn((m, n), device="cuda").mul_(5).to(dtype)
    numel, size = m * n, src.element_size()
    yield "empty_like", src, torch.empty_like(src)
    for gap in GAPS:
        pool = torch.empty(2 * numel + gap // size, device="cuda", dtype=dtype)
        x = pool[:numel].view(m, n)
        x.copy_(src)
        yield f"gap {gap >> 10:>6} KiB", x, pool[numel + gap // size :].view(m, n)
        del pool, x


def main():
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[1].split(",")]
    dtypes = [getattr(torch, d) for d in sys.argv[2].split(",")]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    print("placement: median of rounds (us), QuACK / kernels_cuda", flush=True)
    for m, n in shapes:
        for dtype in dtypes:
            for label, x, y in placements(m, n, dtype):
                ref = torch.softmax(x.double(), -1)
                fns = {"quack": lambda: quack_softmax_fwd(x, y), "cuda": lambda: cuda_softmax(x, out=y)}
                errs = {}
                for name, fn in fns.items():
                    y.fill_(float("nan"))
                    fn()
                    torch.cuda.synchronize()
                    errs[name] = (y.double() - ref).abs().max().item()
                del ref
                times = {name: [] for name in fns}
                for _ in range(rounds):
                    for name, fn in fns.items():
                        times[name].append(trimmed_mean(triton.testing.do_bench(fn, return_mode="all")) * 1e3)
                q, c = (sorted(times[k])[len(times[k]) // 2] for k in ("quack", "cuda"))
                offset = (y.data_ptr() - x.data_ptr()) >> 10
                print(
                    f"{m}x{n} {str(dtype)[6:]:8s} {label:16s} y - x {offset:>9} KiB  quack {q:8.2f}  cuda {c:8.2f}"
                    f"  ratio {q / c:.3f}  rounds q {' '.join(f'{v:.2f}' for v in times['quack'])}"
                    f" c {' '.join(f'{v:.2f}' for v in times['cuda'])}  err q {errs['quack']:.1e} c {errs['cuda']:.1e}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
