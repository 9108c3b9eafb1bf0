# A probe: not part of any package.
# ruff: noqa: B023 -- every lambda here is called within the iteration that made it
"""kernels_cuda's fused kernels (v3 forward, 06 backward) at short rows, in launch shapes given
per form (TPR:ITEMS, threads a row and 16-byte packs a thread; auto = the package's plan), beside
QuACK and kernels_triton, at row counts from under one wave to many.

Device time: the L2 flushed by a write (as the sweep's), then the same 30 us spin for every
implementation, then the launch (lead-spin/ found the wait moves small launches by up to 3%, and
time_cuda's wait is each implementation's own); every form of a point in turns, the order
reversed every other round; the median of all samples. Each output (NaN-poisoned first) is
checked against float64, beside torch's own error."""

import statistics
import sys
from functools import lru_cache

import kernels_cuda.softmax_backward  # the module, loaded on first use otherwise
import torch
from kernels_cuda import softmax_variants as sv
from labtools import bench

sb = sys.modules["kernels_cuda.softmax_backward"]
ROUNDS = 7
REPS = 60
WAIT_US = 30
PLANS = {"softmax": (sv, sv._plan), "softmax_backward": (sb, sb._plan)}
POINTS = [  # op, dtype, N, row counts, forms
    ("softmax", "float32", 600, (1024, 4096, 16384, 65536), ("auto", "64:3", "32:5")),
    ("softmax", "bfloat16", 600, (4096, 65536), ("auto", "32:3", "32:4")),
    ("softmax", "float32", 1024, (4096, 32768), ("auto", "64:4", "32:8")),
    ("softmax_backward", "float32", 600, (4096, 65536), ("auto", "64:3", "32:5")),
    ("softmax_backward", "bfloat16", 600, (4096, 65536), ("auto", "32:3")),
]

clock = bench._CudaClock(bench.DEFAULT_FLUSH_BYTES)
CYCLES = int(WAIT_US * clock.cycles_per_us())


def use(op, form):
    """Point the package's plan for `op` at the form's launch."""
    module, package_plan = PLANS[op]
    if form == "auto":
        module._plan = package_plan
    else:
        tpr, items = (int(v) for v in form.split(":"))

        def fused(variant, M, N, dtype, vec, device, cfg, same):
            spec = module.fused_spec(dtype, tpr, items, vec)
            rpb = dict(spec.constants)["RPB"]
            assert tpr * items * vec >= N
            return sv.Launch(spec, grid=-(-M // rpb), block=tpr * rpb)

        module._plan = lru_cache(fused)
    sv._clear_caches()
    sb._dense_calls.clear()


def runner(op, form, args):
    if form == "quack":
        from quack.softmax import softmax_bwd as q_bwd
        from quack.softmax import softmax_fwd as q_fwd

        return (lambda: q_fwd(*args)) if op == "softmax" else (lambda: q_bwd(args[1], args[0]))
    if form == "triton":
        import kernels_triton

        fn = kernels_triton.softmax if op == "softmax" else kernels_triton.softmax_backward
        return lambda: fn(*args)
    use(op, form)
    fn = kernels_cuda.softmax if op == "softmax" else kernels_cuda.softmax_backward
    return lambda: fn(*args)


def timed(fn):
    for _ in range(3):
        fn()
    clock.synchronize()
    pairs = []
    for _ in range(REPS):
        clock.flush_l2()
        clock.busy(CYCLES)
        start, end = clock.event(), clock.event()
        clock.record(start)
        fn()
        clock.record(end)
        pairs.append((start, end))
    clock.synchronize()
    return [1e3 * clock.elapsed_ms(s, e) for s, e in pairs]


def has_quack():
    try:
        import quack.softmax  # noqa: F401
    except Exception:
        return False
    return True


def main():
    peers = ("quack", "triton") if has_quack() else ("triton",)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; rounds {ROUNDS} x {REPS} samples, "
          f"wait {WAIT_US} us", flush=True)  # fmt: skip
    for op, dtype, n, rows, forms in POINTS:
        for m in rows:
            g = torch.Generator(device="cuda").manual_seed(m + n)
            x = (torch.randn((m, n), device="cuda", generator=g) * 5).to(getattr(torch, dtype))
            x[::3, 0], x[1::3, -1] = 40, 40
            if op == "softmax":
                args = (x,)
                ref = torch.softmax(x.double(), -1)
                torch_out = torch.softmax(x, -1)
            else:
                y = torch.softmax(x.float(), -1).to(x.dtype)
                dy = torch.randn((m, n), device="cuda", generator=g).to(x.dtype)
                args = (y, dy)
                yd, dyd = y.double(), dy.double()
                ref = yd * (dyd - (yd * dyd).sum(-1, keepdim=True))
                torch_out = torch._softmax_backward_data(dy, y, -1, y.dtype)
            torch_err = (torch_out.double() - ref).abs().max().item()
            all_forms = (*forms, *peers)
            notes = {}
            for form in all_forms:
                fn = runner(op, form, args)
                out = fn()
                torch.cuda.synchronize()
                err = (out.double() - ref).abs().max().item()
                if form == "auto":
                    launch = PLANS[op][0]._plan("auto", m, n, dtype, sv.full_vec(dtype), sv._device(0),
                                                PLANS[op][0].AUTO, True)  # fmt: skip
                    c = dict(launch.spec.constants)
                    notes[form] = f"({c.get('TPR')}:{c.get('ITEMS')}) err {err:.1e}"
                else:
                    notes[form] = f"err {err:.1e}"
                if not err <= max(4 * torch_err, 1e-6):
                    notes[form] += " WRONG"
            samples = {f: [] for f in all_forms}
            for r in range(ROUNDS):
                for form in all_forms if r % 2 == 0 else all_forms[::-1]:
                    samples[form] += timed(runner(op, form, args))
            med = {f: statistics.median(s) for f, s in samples.items()}
            base = med["quack"] if "quack" in med else med["auto"]
            print(f"\n{op} {m}x{n} {dtype} (torch err {torch_err:.1e}); ratio = form / "
                  f"{'quack' if 'quack' in med else 'auto'}", flush=True)  # fmt: skip
            for form in all_forms:
                print(f"  {form:>7} {med[form]:8.2f} us {med[form] / base:6.3f}  {notes[form]}", flush=True)


if __name__ == "__main__":
    main()
