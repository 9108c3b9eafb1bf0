"""lab roofline SWEEP.json: the roofline and fraction-of-copy plots of a sweep.

The plots go to a run folder of their own (out/roofline-<time>-<id>/, or --out DIR),
never beside the sweep: the run that wrote the sweep keeps its folder as it left it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from labtools import cli
from labtools.cli import UsageError


def configure(parser) -> None:
    parser.add_argument(
        "sweep",
        type=sweep_path,
        help="a sweep JSON written by `lab bench` or `lab run`, or the run folder holding it "
        "(its sweep_softmax.json, or its only sweep_*.json)",
    )
    parser.add_argument(
        "--shape",
        type=cli.one_shape,
        help="MxN of the roofline's dots, one the sweep measured (default: 16384x4096 when swept, "
        "else the shape with the most implementations)",
    )
    parser.add_argument(
        "--out", type=Path, help="folder for the PNGs (default: a new out/roofline-<time>-<id>/; locked)"
    )


def sweep_path(text: str) -> Path:
    """A sweep file, or a run folder with sweep_softmax.json or exactly one sweep_*.json."""
    import argparse

    folder = Path(text)
    if not folder.is_dir():
        return cli.input_file(text)
    found = sorted(folder.glob("sweep_*.json"))
    if (folder / "sweep_softmax.json").is_file():
        return cli.input_file(str(folder / "sweep_softmax.json"))
    if len(found) == 1:
        return cli.input_file(str(found[0]))
    listed = ", ".join(p.name for p in found) or "none"
    raise argparse.ArgumentTypeError(f"{text} is a folder; name one sweep_*.json in it (there: {listed})")


# Fields of a record the plots compute with: each a finite number > 0 (None allowed where listed).
POSITIVE_FIELDS = ("median_us", "gbps", "tflops", "intensity")
OPTIONAL_POSITIVE_FIELDS = ("call_us", "frac_of_copy", "copy_gbps", "ref_us")


def record_problem(r) -> str | None:
    """Why record `r` (a dict from a sweep file) cannot be plotted, or None."""
    if not isinstance(r, dict):
        return f"is {type(r).__name__}, not an object"
    for name in POSITIVE_FIELDS + OPTIONAL_POSITIVE_FIELDS:
        if name not in r and name in POSITIVE_FIELDS:
            return f"has no {name}"
        v = r.get(name)
        if v is None and name in OPTIONAL_POSITIVE_FIELDS:
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
            return f"{name} is {v!r}; expected a finite number > 0"
    shape = r.get("shape")
    if not isinstance(shape, list) or not shape or not all(type(n) is int and n > 0 for n in shape):
        return f"shape is {shape!r}; expected whole numbers > 0"
    return None


def check_records(doc: dict, path: Path, option: str) -> None:
    records = doc.get("records")
    if not isinstance(records, list):
        raise UsageError(f"argument {option}: {path}: records is not a list")
    for k, r in enumerate(records):
        why = record_problem(r)
        if why:
            who = (
                f"{r.get('impl', '?')} {r.get('shape', '?')} {r.get('dtype', '?')}"
                if isinstance(r, dict)
                else ""
            )
            raise UsageError(f"argument {option}: {path}: record {k} ({who}): {why}"[:400])
    copy = (doc.get("ceilings") or {}).get("copy_gbps") if isinstance(doc.get("ceilings"), dict) else None
    if copy is not None and (
        isinstance(copy, bool) or not isinstance(copy, int | float) or not math.isfinite(copy) or copy <= 0
    ):
        raise UsageError(
            f"argument {option}: {path}: ceilings.copy_gbps is {copy!r}; expected a finite number > 0"
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
    check_records(doc, path, option)
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
