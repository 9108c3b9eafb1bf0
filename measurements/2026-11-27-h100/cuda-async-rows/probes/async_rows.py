# A probe: not part of any package.
# ruff: noqa: B023 -- every lambda here is called within the iteration that made it
"""kernels_cuda's v3 (03) with its row loaded through registers (the package's) or staged in
shared memory by cp.async (probes/async.diff, the load path QuACK's softmax takes), at
threads-per-row and packs-per-thread counts given per form; QuACK and kernels_triton beside them
when importable.

    async_rows.py SHAPE DTYPE FORMS [ROUNDS]
    e.g. async_rows.py 8192x8192 bfloat16 auto,256:4:1,128:8:0,128:8:1 5
    (a form: auto, TPR:ITEMS:ASYNC, quack or triton; the first form is the baseline of the ratios)

Device time: triton.testing.do_bench (L2 flushed by a write, as the sweep's), the forms in
turns for ROUNDS rounds; each round's trimmed mean (middle 80% of the calls), the median and the
least of the rounds. Each form's output (NaN-poisoned before) is checked against float64."""

import sys
from functools import lru_cache

import torch
import triton.testing
from kernels_cuda import softmax_variants as sv

PACKAGE_PLAN = sv._plan


def trimmed_mean(values):
    kept = sorted(values)[len(values) // 10 : len(values) - len(values) // 10]
    return sum(kept) / len(kept)


def use(form):
    """Point kernels_cuda.softmax at the form's launch."""
    if form == "auto":
        sv._plan = PACKAGE_PLAN
    else:
        tpr, items, staged = (int(v) for v in form.split(":"))

        def fused(variant, M, N, dtype, vec, device, cfg, same):
            spec = sv.fused_spec(dtype, tpr, items, vec)
            spec = sv.Spec(spec.source, spec.kernel, dtype, (*spec.constants, ("ASYNC", staged)))
            rpb = dict(spec.constants)["RPB"]
            assert tpr * items * vec >= N
            return sv.Launch(spec, grid=-(-M // rpb), block=tpr * rpb)

        sv._plan = lru_cache(fused)
    sv._clear_caches()


def runner(form, x, out):
    if form == "quack":
        from quack.softmax import softmax as quack_softmax

        return lambda: quack_softmax(x)
    if form == "triton":
        from kernels_triton import softmax as triton_softmax

        return lambda: triton_softmax(x)
    use(form)
    return lambda: sv.softmax(x, out=out)


def main():
    m, n = (int(v) for v in sys.argv[1].split("x"))
    dtype = getattr(torch, sys.argv[2])
    forms = sys.argv[3].split(",")
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    forms = [f for f in forms if f != "quack" or _has_quack()]
    x = (torch.randn((m, n), device="cuda") * 5).to(dtype)
    x[::3, 0] = 40
    x[1::3, -1] = 40
    out = torch.empty_like(x)
    ref = torch.softmax(x.double(), -1)
    torch_err = (torch.softmax(x, -1).double() - ref).abs().max().item()
    notes, times = {}, {form: [] for form in forms}
    for form in forms:
        out.fill_(float("nan"))
        y = runner(form, x, out)()
        y = out if y is None else y
        torch.cuda.synchronize()
        err = (y.double() - ref).abs().max().item()
        plan = sv._plan(
            "auto", m, n, str(dtype)[6:], sv.full_vec(str(dtype)[6:]), sv._device(0), sv.AUTO, False
        )
        what = dict(plan.spec.constants) if form not in ("quack", "triton") else ""
        notes[form] = f"{what} err {err:.1e} (torch {torch_err:.1e})"
    for _ in range(rounds):
        for form in forms:
            fn = runner(form, x, out)
            fn()
            calls = triton.testing.do_bench(fn, return_mode="all")
            times[form].append(trimmed_mean(calls) * 1e3)
    gb = 2 * x.numel() * x.element_size() / 1e3
    first = None
    print(f"fwd {m}x{n} {str(dtype)[6:]}", flush=True)
    for form, ts in times.items():
        t = sorted(ts)[len(ts) // 2]
        first = first or t
        print(
            f"  {form:>9} {t:8.2f} us (least {min(ts):8.2f}) {gb / t:7.0f} GB/s /first {t / first:.3f}"
            f"  {notes[form]}  rounds {' '.join(f'{v:.2f}' for v in ts)}",
            flush=True,
        )


def _has_quack():
    try:
        import quack.softmax  # noqa: F401
    except Exception:
        return False
    return True


if __name__ == "__main__":
    main()
