"""lab roofline SWEEP.json: the roofline and fraction-of-copy plots of a sweep."""

from __future__ import annotations

from pathlib import Path


def configure(parser) -> None:
    parser.add_argument("sweep", type=Path, help="a sweep JSON written by `lab bench` or `lab run`")
    parser.add_argument(
        "--shape",
        help="MxN of the roofline's dots (default: 16384x4096 when swept, "
        "else the shape with the most implementations)",
    )
    parser.add_argument("--out", type=Path, help="folder for the PNGs (default: the sweep's folder)")


def main(args) -> int:
    from labtools.roofline import write_plots
    from labtools.sweep import Sweep, parse_shapes

    sweep = Sweep.load(args.sweep)
    shape = parse_shapes(args.shape)[0] if args.shape else None
    for path in write_plots(sweep, args.out or args.sweep.parent, shape=shape):
        print(f"wrote {path}")
    return 0
