"""lab roofline SWEEP.json: the roofline and fraction-of-copy plots of a sweep.

The plots go to a run folder of their own (out/roofline-<time>-<id>/, or --out DIR),
never beside the sweep: the run that wrote the sweep keeps its folder as it left it.
"""

from __future__ import annotations

import json
from pathlib import Path

from labtools import cli
from labtools.cli import UsageError


def configure(parser) -> None:
    parser.add_argument("sweep", type=cli.input_file, help="a sweep JSON written by `lab bench` or `lab run`")
    parser.add_argument(
        "--shape",
        type=cli.one_shape,
        help="MxN of the roofline's dots, one the sweep measured (default: 16384x4096 when swept, "
        "else the shape with the most implementations)",
    )
    parser.add_argument(
        "--out", type=Path, help="folder for the PNGs (default: a new out/roofline-<time>-<id>/; locked)"
    )


def load_sweep(path: Path, option: str = "sweep"):
    """The sweep in `path`, or UsageError saying why it is not one that can be plotted."""
    from labtools.sweep import Sweep

    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise UsageError(
            f"argument {option}: {path} is not JSON ({type(exc).__name__}: {exc})"[:300]
        ) from None
    except OSError as exc:
        raise UsageError(f"argument {option}: cannot read {path}: {exc.strerror or exc}") from None
    if not isinstance(doc, dict) or doc.get("kind") != "labtools.sweep":
        raise UsageError(
            f'argument {option}: {path} is not a sweep (no "kind": "labtools.sweep"); '
            "give a sweep_*.json written by lab bench or lab run"
        )
    try:
        sweep = Sweep.from_dict(doc)
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(
            f"argument {option}: {path} is a damaged sweep ({type(exc).__name__}: {exc})"[:300]
        ) from None
    if not sweep.records:
        raise UsageError(
            f"argument {option}: {path} has no records to plot (every implementation skipped or failed)"
        )
    return sweep


def main(args) -> int:
    from labtools import runs
    from labtools.roofline import write_plots
    from labtools.sweep import shape_str

    sweep = load_sweep(args.sweep)
    if args.shape is not None and not sweep.at(args.shape):
        measured = sorted({tuple(r.shape) for r in sweep.records})
        raise UsageError(
            f"argument --shape: {shape_str(args.shape)} is not in {args.sweep}; "
            f"measured: {', '.join(shape_str(s) for s in measured)}"
        )
    with runs.open_run("roofline", args.out, command_line=args.command_line) as run:
        for path in write_plots(sweep, run.path, shape=args.shape):
            print(f"wrote {path}")
        run.finish(device=sweep.device, source=str(args.sweep))
    return 0
