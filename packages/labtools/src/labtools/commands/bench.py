"""lab bench OP: time every registered implementation of OP over the shape sweep."""

from __future__ import annotations

import sys
from pathlib import Path


def configure(parser) -> None:
    from labtools.sweep import B512, DTYPES, SWEEP_SHAPES, shape_str

    parser.add_argument("op", choices=["softmax", "softmax_backward"], help="the op to sweep")
    parser.add_argument(
        "--shapes",
        help="comma-separated MxN list (default: the sweep: "
        f"{', '.join(shape_str(s) for s in SWEEP_SHAPES)}; on CPU a few small shapes)",
    )
    parser.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated (default: %(default)s)")
    parser.add_argument(
        "--impls",
        help="comma-separated implementation names or labels (default: all registered; "
        "the reference, F.softmax, always runs for vs_ref)",
    )
    parser.add_argument("--quick", action="store_true", help="three shapes instead of the full sweep")
    parser.add_argument(
        "--b512", action="store_true", help=f"only the manifest's B512 point, {shape_str(B512)} float32"
    )
    parser.add_argument(
        "--device",
        choices=["auto", "cuda", "cpu"],
        default="auto",
        help="default: cuda when there is one, else cpu",
    )
    parser.add_argument(
        "--time-cap",
        type=float,
        default=None,
        help="seconds of timing per (impl, shape, dtype) at most (default 1 on CUDA, 0.5 on CPU)",
    )
    parser.add_argument(
        "--no-ceiling", action="store_true", help="skip measuring the copy ceiling (no frac_of_copy)"
    )
    parser.add_argument(
        "--matmul", action="store_true", help="also measure the matmul ceilings (for the roofline)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="where to write the sweep (default: out/sweep_OP.json)")


def main(args) -> int:
    from labtools import ceilings
    from labtools.sweep import (
        B512,
        SweepConfig,
        default_device,
        default_shapes,
        format_table,
        parse_shapes,
        run_sweep,
        shape_str,
        summarize,
    )

    device = default_device() if args.device == "auto" else args.device
    if args.b512:
        shapes, dtypes = (B512,), ("float32",)
    else:
        shapes = parse_shapes(args.shapes) if args.shapes else default_shapes(device, args.quick)
        dtypes = tuple(d.strip() for d in args.dtypes.split(","))
    if device == "cpu" and not args.shapes and not args.b512:
        print(
            f"lab bench: no CUDA device: CPU implementations only, at small shapes "
            f"({', '.join(shape_str(s) for s in shapes)})",
            file=sys.stderr,
        )
    impls = tuple(i.strip() for i in args.impls.split(",")) if args.impls else ()
    cap = args.time_cap or (1.0 if device == "cuda" else 0.5)
    config = SweepConfig(args.op, device, shapes, dtypes, impls, seed=args.seed, time_cap_s=cap)
    ceiling = None
    if not args.no_ceiling:
        print(f"lab bench: measuring the {device} copy ceiling", file=sys.stderr, flush=True)
        ceiling = ceilings.measure(device, matmul=args.matmul)
    sweep = run_sweep(config, ceilings=ceiling, command=args.command_line)
    if ceiling is not None:
        print(f"copy ceiling: {ceiling.copy_gbps:,.1f} GB/s on {ceiling.device}")
    print(format_table(sweep))
    for title, entries in (("skipped", sweep.skipped), ("FAILED", sweep.failed)):
        for line in summarize(entries):
            print(f"{title}: {line}")
    path = sweep.save(args.json or Path("out") / f"sweep_{args.op}.json")
    print(f"wrote {path}")
    return 1 if sweep.failed else 0
