#!/usr/bin/env python3
"""Call time of a cross-entropy step, ours beside F.cross_entropy: wall time a call, the implementations in turns.

Where the logits are small (a short training run's LM head) a step's loss costs host time, not device time.
For F.cross_entropy, kernels_cuda.cross_entropy and kernels_triton.cross_entropy this times the step (a fresh
`x.clone().requires_grad_()`, the loss, `.backward()`) and the forward alone (no gradient): each function
`--calls` calls back to back a round, synchronized at the end, the functions in turns and the order reversed
every other round (labtools' time_calls_taking_turns, so that a drift of the host's speed hits them alike);
the median over `--rounds` rounds, µs a call. The clone alone is timed too: it is in every step. A package that
is not importable is skipped, with the reason. Public API only.

    python3 benchmarks/cross_entropy_call_time.py --shapes 2048x600 --out call_time.json
    python3 benchmarks/cross_entropy_call_time.py --table call_time.json          # a markdown table
    python3 benchmarks/cross_entropy_call_time.py --shapes 2048x600 --profile 200  # where a step's host time goes

--profile N times nothing: it runs each step N times under cProfile and prints, a step, the functions that
take the most host time of their own (the launches, the allocations, the autograd engine, the wrapper's
Python). The profiler slows every Python call alike, so the ranking is what to read, not the sum.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import statistics
import sys

IMPLS = ("F.cross_entropy", "kernels_cuda", "kernels_triton")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--shapes", default="2048x600,4096x600", help="comma-separated MxV (default 2048x600,4096x600)"
    )
    p.add_argument(
        "--dtypes", default="float32", help="comma-separated, of float32, bfloat16 (default float32)"
    )
    p.add_argument("--reduction", default="mean", choices=("mean", "sum"), help="the loss's (default mean)")
    p.add_argument("--calls", type=int, default=300, help="calls a function a round (default 300)")
    p.add_argument("--rounds", type=int, default=6, help="rounds (default 6)")
    p.add_argument("--out", help="write the JSON here (atomically) instead of stdout")
    p.add_argument("--table", metavar="JSON", help="print a run's markdown table")
    p.add_argument(
        "--profile", type=int, metavar="N", help="print each step's host-time profile over N calls; no timing"
    )
    args = p.parse_args(argv)
    try:
        args.shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
        assert all(len(s) == 2 and min(s) >= 1 for s in args.shapes)
    except (ValueError, AssertionError):
        p.error(f"--shapes: comma-separated MxV with M, V >= 1, got {args.shapes!r}")
    args.dtypes = args.dtypes.split(",")
    if not set(args.dtypes) <= {"float32", "bfloat16"}:
        p.error(f"--dtypes: comma-separated, of float32, bfloat16; got {','.join(args.dtypes)!r}")
    for name in ("calls", "rounds", "profile"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            p.error(f"--{name}: at least 1, got {getattr(args, name)}")
    return args


def implementations() -> tuple[dict, dict]:
    """({name: cross_entropy}, {name: why it is skipped})."""
    import torch.nn.functional as F

    found, skipped = {"F.cross_entropy": F.cross_entropy}, {}
    for name in IMPLS[1:]:
        try:
            found[name] = importlib.import_module(name).cross_entropy
        except Exception as exc:  # noqa: BLE001 - any import failure: reported, skipped
            skipped[name] = f"not importable ({type(exc).__name__}: {exc})"
    return found, skipped


def functions(x0, t, reduction: str, impls: dict) -> dict:
    """The functions taking turns on logits x0 and targets t: the clone alone, and each
    implementation's step (a fresh leaf, the loss, its backward) and forward alone."""

    def step(fn):
        return lambda: fn(x0.clone().requires_grad_(), t, reduction=reduction).backward()

    def forward(fn):
        return lambda: fn(x0, t, reduction=reduction)

    fns = {"clone": lambda: x0.clone().requires_grad_()}
    for name, fn in impls.items():
        fns[f"{name} step"], fns[f"{name} forward"] = step(fn), forward(fn)
    return fns


def cases(args: argparse.Namespace, impls: dict):
    """(shape, dtype, functions()) for each shape and dtype asked for: logits and targets on the device, seeded."""
    import torch

    gen = torch.Generator("cuda").manual_seed(0)
    for m, v in args.shapes:
        for dtype in args.dtypes:
            x0 = torch.randn(m, v, device="cuda", dtype=getattr(torch, dtype), generator=gen)
            t = torch.randint(0, v, (m,), device="cuda", generator=gen)
            yield f"{m}x{v}", dtype, functions(x0, t, args.reduction, impls)


def measure(args: argparse.Namespace, impls: dict) -> list[dict]:
    import torch
    from labtools.bench.turns import time_calls_taking_turns

    rows = []
    for shape, dtype, fns in cases(args, impls):
        times = time_calls_taking_turns(fns, args.calls, args.rounds, synchronize=torch.cuda.synchronize)
        us = {name: statistics.median(rounds) for name, rounds in times.items()}
        for name in impls:
            rows.append({"shape": shape, "dtype": dtype, "impl": name, "step_us": round(us[f"{name} step"], 1),
                         "forward_us": round(us[f"{name} forward"], 1), "clone_us": round(us["clone"], 1)})  # fmt: skip
    return rows


def profile(fns: dict, calls: int, synchronize=lambda: None, top: int = 12) -> str:
    """Each function's `calls` calls under cProfile (after one call outside it, which compiles and caches):
    the `top` functions by their own time, µs and calls a call of the function profiled."""
    import cProfile
    import pstats

    def calls_of(fn):
        for _ in range(calls):
            fn()
        synchronize()

    lines = []
    for name, fn in fns.items():
        fn()
        synchronize()
        prof = cProfile.Profile()
        prof.runcall(calls_of, fn)
        entries = sorted(pstats.Stats(prof).stats.items(), key=lambda e: -e[1][2])[:top]
        lines += [f"{name}: µs of its own, µs with callees, calls; a call of {name}"]
        for (path, line, func), (_, ncalls, own, total, _) in entries:
            where = func if path == "~" else f"{path.rsplit('/', 1)[-1]}:{line}({func})"
            lines.append(
                f"  {own / calls * 1e6:8.1f} {total / calls * 1e6:8.1f} {ncalls / calls:6.1f}  {where}"
            )
    return "\n".join(lines) + "\n"


def print_profiles(args: argparse.Namespace, impls: dict) -> None:
    """--profile: each shape's and dtype's steps, profiled."""
    import torch

    for shape, dtype, fns in cases(args, impls):
        print(f"## {shape} {dtype}, the {args.reduction} loss")
        steps = {name: fn for name, fn in fns.items() if name.endswith(" step")}
        print(profile(steps, args.profile, torch.cuda.synchronize))


def table(report: dict) -> str:
    """A markdown table of a run: the step's and the forward's µs a call, each implementation's."""
    lines = [f"{report['gpu']}, {report['date']}, the {report['reduction']} loss, µs a call "
             f"({', '.join(f'{k} {v}' for k, v in report['versions'].items())})", "",
             "| shape | dtype | implementation | step | forward alone | the clone alone |",
             "|---|---|---|---:|---:|---:|"]  # fmt: skip
    for r in report["rows"]:
        lines.append(f"| {r['shape']} | {r['dtype']} | {r['impl']} | {r['step_us']:.1f} | {r['forward_us']:.1f} "
                     f"| {r['clone_us']:.1f} |")  # fmt: skip
    lines += [f"\n{name}: skipped, {why}" for name, why in report.get("skipped", {}).items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.table:
        sys.stdout.write(table(json.loads(open(args.table).read())))
        return 0
    import torch

    if not torch.cuda.is_available():
        print("cross_entropy_call_time.py times CUDA launches: no CUDA device here", file=sys.stderr)
        return 2
    from labtools.atomic import write_report
    from labtools.env import collect

    impls, skipped = implementations()
    if args.profile:
        print_profiles(args, impls)
        return 0
    env = collect()  # `lab env`'s versions, those installed, and torch's CUDA
    versions = {
        "python": env.python,
        **{k: v for k, v in env.versions.items() if v},
        "cuda": torch.version.cuda,
    }
    report = {"gpu": torch.cuda.get_device_name(), "date": datetime.date.today().isoformat(),
              "command": " ".join(sys.argv), "versions": versions, "reduction": args.reduction,
              "skipped": skipped, "rows": measure(args, impls)}  # fmt: skip

    write_report(json.dumps(report, indent=1) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
