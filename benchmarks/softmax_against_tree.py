#!/usr/bin/env python3
"""kernels_triton's softmax (and log_softmax) against another tree's: device and call time, and error.

Issue 41's sweep comparison: an older commit's kernels_triton (say e655ccb's, the last with the split-row
form) is timed from its source folder (--tree; `git worktree add` it), one process a tree, and --compare
prints the two runs side by side. For each (shape, dtype, op, direction), timed as `lab bench` times: device
time (labtools' time_cuda: CUDA events, L2 flushed, median) and call time (time_call: wall per call, back to
back, median of blocks); the torch op's device time in the same process (how much the machine drifted
between two processes); and the largest error against float64 beside the torch op's. An op the tree lacks
is skipped. Public API only: softmax, softmax_backward, log_softmax, log_softmax_backward.

    python3 benchmarks/softmax_against_tree.py --tree /tmp/e655/packages/kernels-triton/src --out old.json
    python3 benchmarks/softmax_against_tree.py --out new.json                    # this tree's kernels_triton
    python3 benchmarks/softmax_against_tree.py --compare old.json new.json       # a markdown table
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import statistics
import sys

SHAPES = "4096x600,65536x600,262144x600,32768x1024,16384x4096,8192x8192,4096x32768,1024x131072,256x262144"
OPS = {  # op: (forward in torch, backward in torch (y, dy))
    "softmax": ("softmax", "_softmax_backward_data"),
    "log_softmax": ("log_softmax", "_log_softmax_backward_data"),
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tree", help="a folder holding the kernels_triton package to time (default: installed)")
    p.add_argument("--shapes", default=SHAPES, help="comma-separated MxN (default: lab bench's sweep)")
    p.add_argument("--dtypes", default="float32,bfloat16", help="comma-separated (default float32,bfloat16)")
    p.add_argument("--ops", default="softmax", help=f"comma-separated, of {', '.join(OPS)} (default softmax)")
    p.add_argument("--dirs", default="fwd,bwd", help="comma-separated, of fwd, bwd (default both)")
    p.add_argument("--out", help="write the JSON here (atomically) instead of stdout")
    p.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"), help="two runs' JSON side by side")
    args = p.parse_args(argv)
    try:
        args.shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
        assert all(len(s) == 2 and min(s) >= 1 for s in args.shapes)
    except (ValueError, AssertionError):
        p.error(f"--shapes: comma-separated MxN with M, N >= 1, got {args.shapes!r}")
    choices = {"ops": tuple(OPS), "dirs": ("fwd", "bwd"), "dtypes": ("float32", "float16", "bfloat16")}
    for name, allowed in choices.items():
        values = getattr(args, name).split(",")
        if not set(values) <= set(allowed):
            p.error(f"--{name}: comma-separated, of {', '.join(allowed)}; got {getattr(args, name)!r}")
        setattr(args, name, values)
    return args


def torch_op(op: str, direction: str):
    """The torch op of (op, direction) on rows: forward(x), or backward(y, dy) from the forward's output."""
    import torch

    forward, backward = (getattr(torch, name) for name in OPS[op])
    return (lambda x: forward(x, -1)) if direction == "fwd" else (lambda y, dy: backward(dy, y, -1, y.dtype))


def measure(args: argparse.Namespace) -> list[dict]:
    import torch
    from labtools.bench.blocks import time_call
    from labtools.bench.cuda import time_cuda

    kt = importlib.import_module("kernels_triton")

    def call_us(fn, *a) -> float:
        return statistics.median(time_call(fn, [a], "cuda", time_cap_s=0.25).samples_us)

    def device_us(fn, *a) -> float:
        return statistics.median(time_cuda(fn, [a], time_cap_s=0.25).samples_us)

    rows, gen = [], torch.Generator("cuda").manual_seed(0)
    for m, n in args.shapes:
        for dtype in args.dtypes:
            x = torch.randn(m, n, device="cuda", dtype=getattr(torch, dtype), generator=gen) * 3
            dy = torch.randn(x.shape, device="cuda", dtype=x.dtype, generator=gen)
            for op in args.ops:
                y = torch_op(op, "fwd")(x)
                for direction in args.dirs:
                    ours = getattr(kt, op if direction == "fwd" else f"{op}_backward", None)
                    if ours is None:  # the tree has no such op
                        continue
                    theirs, inputs = torch_op(op, direction), ((x,) if direction == "fwd" else (y, dy))
                    want = theirs(*(t.double() for t in inputs))
                    rows.append({
                        "op": op, "dir": direction, "shape": f"{m}x{n}", "dtype": dtype,
                        "device_us": device_us(ours, *inputs), "call_us": call_us(ours, *inputs),
                        "torch_device_us": device_us(theirs, *inputs),
                        "error": (ours(*inputs).double() - want).abs().max().item(),
                        "torch_error": (theirs(*inputs).double() - want).abs().max().item(),
                    })  # fmt: skip
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def compare(old: dict, new: dict) -> str:
    """A markdown table of the points both runs timed: device and call time, old -> new, and their ratios."""
    key = lambda r: (r["op"], r["dir"], r["shape"], r["dtype"])  # noqa: E731
    before = {key(r): r for r in old["rows"]}
    lines = [f"{old['tree']} ({old['gpu']}) -> {new['tree']} ({new['gpu']})", "",
             "| op | direction | shape | dtype | device µs | ratio | call µs | ratio | torch's device ratio |",
             "|---|---|---|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for r in new["rows"]:
        if (b := before.get(key(r))) is not None:
            lines.append(
                f"| {r['op']} | {r['dir']} | {r['shape']} | {r['dtype']} | {b['device_us']:.1f} → {r['device_us']:.1f} "
                f"| {r['device_us'] / b['device_us']:.3f} | {b['call_us']:.1f} → {r['call_us']:.1f} "
                f"| {r['call_us'] / b['call_us']:.3f} | {r['torch_device_us'] / b['torch_device_us']:.3f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.compare:
        old, new = (json.loads(open(path).read()) for path in args.compare)
        sys.stdout.write(compare(old, new))
        return 0
    if args.tree:
        sys.path.insert(0, args.tree)
    import torch

    if not torch.cuda.is_available():
        print("softmax_against_tree.py times CUDA kernels: no CUDA device here", file=sys.stderr)
        return 2
    from labtools.env import collect

    env = collect()  # `lab env`'s versions, those installed, and torch's CUDA
    versions = {
        "python": env.python,
        **{k: v for k, v in env.versions.items() if v},
        "cuda": torch.version.cuda,
    }
    report = {"tree": args.tree or "installed", "gpu": torch.cuda.get_device_name(),
              "date": datetime.date.today().isoformat(), "command": " ".join(sys.argv), "versions": versions,
              "kernels_triton": importlib.import_module("kernels_triton").__file__, "rows": measure(args)}  # fmt: skip
    from labtools.atomic import write_report

    write_report(json.dumps(report, indent=1) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
