# A probe: not part of any package.
# ruff: noqa: B023 -- every lambda here is called within the iteration that made it
"""The packages on the path (the tree before the one-FMA bf16 exponent, or after it) at few
short rows: kernels_triton's own launch ("package"), its warp-a-row form forced ("warp"),
kernels_cuda's launch ("cuda") and, for bf16 rows of 600, kernels_cuda at a warp a row
("cuda@32:3:4:2"), beside QuACK's cubin where one was kept ("qcubin"). Every output is
checked against float64 beside torch's error (qcubin's NaN-poisoned first; the packages return
new tensors).

    python lean_exp.py time ROUNDS   # the same 30 us wait before every launch, forms in turns, medians
    python lean_exp.py ncu           # one launch of each form at 4096x600 inside cudaProfilerStart/Stop
"""

import statistics
import sys
from pathlib import Path

import torch
from kernels_triton.configs import SoftmaxConfig, next_pow2

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "warp-rows" / "probes"))
sys.path.insert(0, str(HERE.parents[1] / "row-base" / "probes"))
from warp_rows import REPS, WAIT_US  # noqa: E402

FORWARD = [  # dtype, row lengths, row counts
    ("bfloat16", (600,), (2304, 4096, 8192, 65536)),
    ("bfloat16", (1000, 2048), (2304, 4096, 8192)),
    ("bfloat16", (1024,), (32768,)),
    ("float32", (600, 1024), (4096, 8192)),
]
BACKWARD = [("float32", (600,), (4096, 8192)), ("bfloat16", (600,), (4096, 8192))]
NCU = [("fwd", "bfloat16", 4096, 600), ("fwd", "float32", 4096, 600), ("fwd", "bfloat16", 8192, 600)]


def forms(direction, dtype_name, m, n):
    """name -> (function of nothing that launches once, the output, the float64 reference, torch's error)."""
    import kernels_cuda
    import kernels_cuda.softmax_backward  # noqa: F401 - the callable module
    import kernels_triton
    import variants

    dtype = getattr(torch, dtype_name)
    op = "softmax" if direction == "fwd" else "softmax_backward"
    warp = SoftmaxConfig(4 * next_pow2(n), 4, warp_rows=True)
    g = torch.Generator(device="cuda").manual_seed(m + n)
    x = (torch.randn((m, n), device="cuda", generator=g) * 5).to(dtype)
    x[::3, 0], x[1::3, -1] = 40, 40
    out = torch.empty_like(x)
    if direction == "fwd":
        args, ref, torch_out = (x,), torch.softmax(x.double(), -1), torch.softmax(x, -1)
        runs = {
            "package": lambda: kernels_triton.softmax(x),
            "warp": lambda: kernels_triton.softmax(x, config=warp),
            "cuda": lambda: kernels_cuda.softmax(x),
        }
    else:
        y = torch.softmax(x.float(), -1).to(dtype)
        dy = torch.randn((m, n), device="cuda", generator=g).to(dtype)
        args = (y, dy)
        yd, dyd = y.double(), dy.double()
        ref = yd * (dyd - (yd * dyd).sum(-1, keepdim=True))
        torch_out = torch._softmax_backward_data(dy, y, -1, dtype)
        runs = {
            "package": lambda: kernels_triton.softmax_backward(y, dy),
            "warp": lambda: kernels_triton.softmax_backward(y, dy, config=warp),
            "cuda": lambda: kernels_cuda.softmax_backward(y, dy),
        }
    plans = {"cuda": "tree"}
    if direction == "fwd" and dtype_name == "bfloat16" and n == 600:
        runs["cuda@32:3:4:2"] = runs["cuda"]
        plans["cuda@32:3:4:2"] = "tree@32:3:4:2"
    if (op, dtype_name, n) in variants.QCUBIN:
        runs["qcubin"] = variants.qcubin_runner(op, dtype_name, args, out)
    torch_err = (torch_out.double() - ref).abs().max().item()
    return runs, out, ref, torch_err, plans, op


def planned(op, plans, name):
    """Point kernels_cuda's plan at the form's launch (the package's own for every other form)."""
    import variants

    variants.use(op, plans.get(name, "tree"))


def check(runs, out, ref, torch_err, plans, op):  # the order forms() returns them in
    notes = {}
    for name, fn in runs.items():
        planned(op, plans, name)
        out.fill_(float("nan"))  # qcubin's output; the packages' are fresh tensors
        got = fn()
        torch.cuda.synchronize()
        err = (got.double() - ref).abs().max().item()
        notes[name] = f"err {err:.1e}" + ("" if err <= max(2 * torch_err, 1e-6) else " WRONG")
    return notes


def time_all(rounds):
    from labtools.bench import time_cuda

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name()} ({sms} SMs), torch {torch.__version__}; rounds {rounds} x {REPS}, "
          f"wait {WAIT_US} us", flush=True)  # fmt: skip
    for direction, points in (("fwd", FORWARD), ("bwd", BACKWARD)):
        for dtype_name, ns, ms in points:
            for n in ns:
                for m in ms:
                    runs, out, ref, torch_err, plans, op = forms(direction, dtype_name, m, n)
                    notes = check(runs, out, ref, torch_err, plans, op)
                    names = list(runs)
                    samples = {name: [] for name in names}
                    for r in range(rounds):
                        for name in names if r % 2 == 0 else names[::-1]:
                            planned(op, plans, name)  # before the batch: not inside a timed call
                            timing = time_cuda(runs[name], [()], min_reps=REPS, max_reps=REPS, batch=REPS,
                                               lead_s=WAIT_US * 1e-6)  # fmt: skip
                            samples[name] += timing.samples_us
                    planned(op, {}, "package")
                    med = {name: statistics.median(s) for name, s in samples.items()}
                    print(f"\n{direction} {m}x{n} {dtype_name} ({m / sms:.1f} rows an SM; torch err {torch_err:.1e}); "
                          "ratio = form / package", flush=True)  # fmt: skip
                    for name in names:
                        print(f"  {name:>14} {med[name]:8.2f} us {med[name] / med['package']:6.3f}  {notes[name]}",
                              flush=True)  # fmt: skip


def ncu_once():
    order = []
    cases = [(case, forms(*case)) for case in NCU]
    for _, made in cases:
        check(*made)  # compiles and warms every form up
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for case, (runs, _, _, _, plans, op) in cases:
        for name, fn in runs.items():
            planned(op, plans, name)
            fn()
            torch.cuda.synchronize()
            order.append(f"{' '.join(map(str, case))} {name}")
        planned(op, {}, "package")
    torch.cuda.cudart().cudaProfilerStop()
    for i, what in enumerate(order):
        print(f"launch {i}: {what}")


if __name__ == "__main__":
    if sys.argv[1] == "time":
        time_all(int(sys.argv[2]))
    else:
        ncu_once()
