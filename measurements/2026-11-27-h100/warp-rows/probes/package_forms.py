# A probe: not part of any package.
# ruff: noqa: B023 -- every lambda here is called within the iteration that made it
"""kernels_triton's launch at its picks (the package before the warp-a-row rule) against the
package's warp-a-row form forced (config=SoftmaxConfig(4 x next_pow2(N), 4, warp_rows=True)),
beside kernels_cuda's launch and QuACK's cubin where one was kept, over row counts and lengths:
where the rule should apply. Timing as warp_rows.py (same wait, in turns, median)."""

import statistics
import sys

import torch
from kernels_triton import configs, launch
from kernels_triton.configs import SoftmaxConfig, next_pow2

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from warp_rows import REPS, WAIT_US  # noqa: E402

POINTS = [  # dtype, row lengths, row counts
    ("float32", (600, 1000, 1024), (2304, 4096, 8192)),
    ("bfloat16", (600, 1000, 2048), (2304, 4096, 8192)),
]


def main(rounds):
    import kernels_cuda
    import kernels_cuda.softmax_backward  # noqa: F401 - the callable module
    import kernels_triton
    from labtools.bench import _CudaClock

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2] / "row-base" / "probes"))
    import variants

    rule = configs.warp_rows_config
    configs.warp_rows_config = lambda *a: None  # the package's picks, as before the rule
    launch.forget_plans()
    clock = _CudaClock(256 * 1024 * 1024)
    cycles = int(WAIT_US * clock.cycles_per_us())

    def timed(fn):
        for _ in range(3):
            fn()
        clock.synchronize()
        pairs = []
        for _ in range(REPS):
            clock.flush_l2()
            clock.busy(cycles)
            start, end = clock.event(), clock.event()
            clock.record(start)
            fn()
            clock.record(end)
            pairs.append((start, end))
        clock.synchronize()
        return [1e3 * clock.elapsed_ms(s, e) for s, e in pairs]

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name()} ({sms} SMs), torch {torch.__version__}; rounds {rounds} x {REPS}, "
          f"wait {WAIT_US} us", flush=True)  # fmt: skip
    for direction in ("fwd", "bwd"):
        op = "softmax" if direction == "fwd" else "softmax_backward"
        for dtype_name, ns, ms in POINTS:
            dtype = getattr(torch, dtype_name)
            for n in ns:
                for m in ms:
                    warp = SoftmaxConfig(4 * next_pow2(n), 4, warp_rows=True)
                    g = torch.Generator(device="cuda").manual_seed(m + n)
                    x = (torch.randn((m, n), device="cuda", generator=g) * 5).to(dtype)
                    x[::3, 0], x[1::3, -1] = 40, 40
                    if direction == "fwd":
                        args = (x,)
                        ref = torch.softmax(x.double(), -1)
                        torch_out = torch.softmax(x, -1)
                        runs = {"picks": lambda: kernels_triton.softmax(x),
                                "warp": lambda: kernels_triton.softmax(x, config=warp),
                                "cuda": lambda: kernels_cuda.softmax(x)}  # fmt: skip
                    else:
                        y = torch.softmax(x.float(), -1).to(dtype)
                        dy = torch.randn((m, n), device="cuda", generator=g).to(dtype)
                        args = (y, dy)
                        yd, dyd = y.double(), dy.double()
                        ref = yd * (dyd - (yd * dyd).sum(-1, keepdim=True))
                        torch_out = torch._softmax_backward_data(dy, y, -1, dtype)
                        runs = {"picks": lambda: kernels_triton.softmax_backward(y, dy),
                                "warp": lambda: kernels_triton.softmax_backward(y, dy, config=warp),
                                "cuda": lambda: kernels_cuda.softmax_backward(y, dy)}  # fmt: skip
                    out = torch.empty_like(x)
                    if (op, dtype_name, n) in variants.QCUBIN:
                        runs["qcubin"] = variants.qcubin_runner(op, dtype_name, args, out)
                    torch_err = (torch_out.double() - ref).abs().max().item()
                    notes = {}
                    for name, fn in runs.items():
                        out.fill_(float("nan"))
                        got = fn()
                        torch.cuda.synchronize()
                        err = (got.double() - ref).abs().max().item()
                        notes[name] = f"err {err:.1e}" + ("" if err <= max(2 * torch_err, 1e-6) else " WRONG")
                    names = list(runs)
                    samples = {name: [] for name in names}
                    for r in range(rounds):
                        for name in names if r % 2 == 0 else names[::-1]:
                            samples[name] += timed(runs[name])
                    med = {name: statistics.median(s) for name, s in samples.items()}
                    applies = rule(m, n, dtype, sms) is not None
                    print(f"\n{direction} {m}x{n} {dtype_name} ({m / sms:.1f} rows an SM; rule {'applies' if applies else 'does not apply'}; "
                          f"torch err {torch_err:.1e}); ratio = form / picks", flush=True)  # fmt: skip
                    for name in names:
                        print(
                            f"  {name:>8} {med[name]:8.2f} us {med[name] / med['picks']:6.3f}  {notes[name]}",
                            flush=True,
                        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
