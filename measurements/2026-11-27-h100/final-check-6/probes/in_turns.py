# A probe: not part of any package.
# ruff: noqa: B023 -- every lambda here is called within the iteration that made it
"""labtools' registered implementations of one op timed in turns, shape by shape: each round
times every implementation once, so a drift of the machine between rounds lands on all of them
alike (lab bench times one implementation after another).

    in_turns.py OP SHAPES DTYPES IMPLS [ROUNDS]
    e.g. in_turns.py softmax 8192x8192,4096x600 bfloat16 quack.softmax,cuda.auto,triton.softmax 5
    (the first implementation is the baseline of the ratios)

Device time: triton.testing.do_bench (L2 flushed by a write before each call); each round's
trimmed mean (middle 80% of the calls), then the median of the rounds. Before timing, each
implementation's output (each returns a new tensor) is compared with the float64 reference; one
off by more than a few roundings of its dtype is reported and not timed."""

import sys

import torch
import triton.testing
from labtools import registry


def trimmed_mean(values):
    kept = sorted(values)[len(values) // 10 : len(values) - len(values) // 10]
    return sum(kept) / len(kept)


def inputs(op, m, n, dtype):
    x = torch.randn((m, n), device="cuda") * 5
    x[::3, 0] = 40  # the maximum first, last, or anywhere
    x[1::3, -1] = 40
    if op == "softmax":
        return (x.to(dtype),), lambda: torch.softmax(x.to(dtype).double(), -1)
    y = torch.softmax(x, -1).to(dtype)
    dy = torch.randn((m, n), device="cuda").to(dtype)
    yd, dyd = y.double(), dy.double()
    return (y, dy), lambda: yd * (dyd - (yd * dyd).sum(-1, keepdim=True))


def main():
    op = sys.argv[1]
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[2].split(",")]
    dtypes = sys.argv[3].split(",")
    names = sys.argv[4].split(",")
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 5
    registry.load_plugins()
    impls = {name: registry.get(name) for name in names}
    print(f"{op}: median of {rounds} rounds (us), ratio = {names[0]} / impl", flush=True)
    for m, n in shapes:
        for dtype in dtypes:
            args, reference = inputs(op, m, n, getattr(torch, dtype))
            ref = reference()
            # garbage (NaN, a wrong row) fails this; rounding of the storage dtype does not
            tol = (0.05 if dtype != "float32" else 1e-4) * max(1.0, ref.abs().max().item())
            runnable, errs = [], {}
            for name, impl in impls.items():
                if not impl.accepts((m, n), dtype):
                    continue
                try:
                    out = impl.fn(*args)
                    torch.cuda.synchronize()
                    err = (out.double() - ref).abs().max().item()
                except Exception as e:  # a peer that does not run at this shape
                    print(f"  {name} at {m}x{n} {dtype}: {type(e).__name__}", flush=True)
                    continue
                errs[name] = err
                if err == err and err < tol:
                    runnable.append(name)
                else:
                    print(f"  {name} at {m}x{n} {dtype}: WRONG, error {err:.1e}", flush=True)
            del ref
            times = {name: [] for name in runnable}
            for _ in range(rounds):
                for name in runnable:
                    fn = impls[name].fn
                    calls = triton.testing.do_bench(lambda: fn(*args), return_mode="all")
                    times[name].append(trimmed_mean(calls) * 1e3)
            med = {name: sorted(ts)[len(ts) // 2] for name, ts in times.items()}
            base = med.get(names[0])
            cells = [
                f"{name} {t:8.2f}" + (f" ({base / t:.3f})" if base and name != names[0] else "")
                for name, t in med.items()
            ]
            print(f"{m}x{n:<7} {dtype:9s} " + "  ".join(cells), flush=True)
            spread = "  ".join(f"{name} {' '.join(f'{v:.2f}' for v in ts)}" for name, ts in times.items())
            print(
                f"    rounds: {spread}; errors: " + " ".join(f"{k} {v:.1e}" for k, v in errs.items()),
                flush=True,
            )


if __name__ == "__main__":
    main()
