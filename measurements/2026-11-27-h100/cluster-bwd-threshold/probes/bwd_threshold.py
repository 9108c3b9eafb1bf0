# A probe: not part of any package.
"""kernels_triton.softmax_backward at launches below cluster.MIN_BYTES, as the package sends them
(the split-row or looped kernels) and sent to the cluster kernel (MIN_BYTES patched to 0), in one
process, the two in turns for ROUNDS rounds:

    bwd_threshold.py SHAPES DTYPES [ROUNDS]   e.g. bwd_threshold.py 16x131072,8x128257 bfloat16 3

Device time: triton.testing.do_bench's median (L2 flushed). Call time: 2000 calls back to back,
wall time per call (what a user feels), the public function with its plan cache warm. Each form's
dx is checked against float64 first (largest error)."""

import sys
import time

import torch
import triton.testing
from kernels_triton import cluster, launch, softmax_backward

PACKAGE_MIN_BYTES = cluster.MIN_BYTES
FORMS = {"package": PACKAGE_MIN_BYTES, "cluster": 0}


def use(min_bytes):
    cluster.MIN_BYTES = min_bytes
    launch.forget_plans()


def call_time(fn, calls=2000):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def main():
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[1].split(",")]
    dtypes = [getattr(torch, d) for d in sys.argv[2].split(",")]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    for m, n in shapes:
        for dtype in dtypes:
            g = torch.Generator(device="cuda").manual_seed(m * n)
            y = torch.softmax(torch.randn((m, n), generator=g, device="cuda") * 3, -1).to(dtype)
            dy = torch.randn((m, n), generator=g, device="cuda").to(dtype)
            yd, dyd = y.double(), dy.double()
            ref = yd * (dyd - (yd * dyd).sum(-1, keepdim=True))
            notes, dev, call = {}, {}, {}
            for form, min_bytes in FORMS.items():
                use(min_bytes)
                dx = softmax_backward(y, dy)
                torch.cuda.synchronize()
                takes = cluster.applies("bwd", m, n, dtype, y.device)
                notes[form] = f"cluster={takes} err={(dx.double() - ref).abs().max().item():.1e}"
                dev[form], call[form] = [], []
            for _ in range(rounds):
                for form, min_bytes in FORMS.items():
                    use(min_bytes)
                    fn = lambda y=y, dy=dy: softmax_backward(y, dy)  # noqa: E731
                    fn()
                    dev[form].append(triton.testing.do_bench(fn, return_mode="median") * 1e3)
                    call[form].append(call_time(fn))
            print(
                f"bwd {m}x{n} {str(dtype)[6:]}  ({3 * m * n * y.element_size() / 2**20:.1f} MiB)", flush=True
            )
            base_dev = base_call = None
            for form in FORMS:
                d, c = sorted(dev[form])[len(dev[form]) // 2], sorted(call[form])[len(call[form]) // 2]
                base_dev, base_call = base_dev or d, base_call or c
                print(
                    f"  {form:8s} device {d:7.2f} us ({d / base_dev:.3f})  call {c:7.2f} us ({c / base_call:.3f})"
                    f"  {notes[form]}  rounds dev {' '.join(f'{v:.2f}' for v in dev[form])}"
                    f" call {' '.join(f'{v:.2f}' for v in call[form])}",
                    flush=True,
                )
    use(PACKAGE_MIN_BYTES)


if __name__ == "__main__":
    main()
