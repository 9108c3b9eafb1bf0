"""lab bench OP: time every registered implementation of OP over the shape sweep.

Writes into its own run folder (see labtools.runs): out/bench-<time>-<id>/ by default,
or --out DIR; --json FILE writes the sweep to FILE instead.
"""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from pathlib import Path

from labtools import cli
from labtools.cli import UsageError

OPS = ("softmax", "softmax_backward", "log_softmax", "cross_entropy")


def configure(parser) -> None:
    from labtools.sweep import B512, DTYPES, SWEEP_SHAPES, shape_str

    parser.add_argument("op", choices=OPS, help="the op to sweep")
    parser.add_argument(
        "--shapes",
        type=cli.shapes,
        help="comma-separated MxN list, each size >= 1 (default: the sweep: "
        f"{', '.join(shape_str(s) for s in SWEEP_SHAPES)}; on CPU a few small shapes)",
    )
    parser.add_argument(
        "--dtypes",
        type=cli.dtypes,
        default=DTYPES,
        help=f"comma-separated, of {', '.join(cli.DTYPES)} (default: {','.join(DTYPES)})",
    )
    parser.add_argument(
        "--impls",
        type=cli.names,
        help="comma-separated implementation names or labels (default: all registered on the device; "
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
        help="where to run (default auto: cuda when there is one, else cpu)",
    )
    parser.add_argument(
        "--time-cap",
        type=cli.positive_float,
        default=None,
        help="seconds of timing per (impl, shape, dtype) at most, > 0 (default 1 on CUDA, 0.5 on CPU)",
    )
    parser.add_argument(
        "--rounds",
        type=cli.positive_int,
        default=3,
        help="the implementations of each point are timed in turns, this many rounds, each a share "
        "of --time-cap (default 3)",
    )
    parser.add_argument(
        "--no-ceiling", action="store_true", help="skip measuring the copy ceiling (no frac_of_copy)"
    )
    parser.add_argument(
        "--matmul", action="store_true", help="also measure the matmul ceilings (for the roofline)"
    )
    parser.add_argument(
        "--seed", type=cli.seed, default=0, help="seed of the random inputs, 0 <= seed < 2**32 (default 0)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="run folder to write (default: a new out/bench-<time>-<id>/); locked while the sweep runs",
    )
    parser.add_argument(
        "--json", type=Path, help="write the sweep to this file instead of a run folder (replaced atomically)"
    )


def resolve_device(requested: str, option: str = "--device") -> str:
    from labtools.sweep import default_device

    found = default_device()
    if requested == "auto":
        return found
    if requested == "cuda" and found != "cuda":
        raise UsageError(f"argument {option}: cuda asked for, but there is no CUDA device here; use cpu")
    return requested


def check_impls(op: str, device: str, wanted: tuple[str, ...]) -> None:
    """Each wanted name or label is a registered implementation of `op` that runs on `device`;
    otherwise say which are registered and which run here."""
    from labtools import registry

    every = registry.implementations(op)
    here = [i for i in every if i.device == device]

    def matches(w: str, impls) -> list:
        return [i for i in impls if w.casefold() in (i.name.casefold(), i.label.casefold())]

    def listing(impls) -> str:
        return ", ".join(f"{i.label} ({i.name})" for i in impls) or "none"

    unknown = [w for w in wanted if not matches(w, every)]
    if unknown:
        raise UsageError(
            f"argument --impls: no {op} implementation named {', '.join(unknown)}; "
            f"registered: {listing(every)}"
        )
    elsewhere = [w for w in wanted if not matches(w, here)]
    if elsewhere:
        where = sorted({i.device for w in elsewhere for i in matches(w, every)})
        raise UsageError(
            f"argument --impls: {', '.join(elsewhere)} run(s) on {'/'.join(where)} only, not on {device} here; "
            f"available on {device}: {listing(here)}"
        )


def check_json_path(path: Path) -> Path:
    if path.is_symlink():
        raise UsageError(f"argument --json: {path} is a symbolic link; name the file itself")
    if path.is_dir():
        raise UsageError(f"argument --json: {path} is a folder; name a file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"argument --json: cannot create {path.parent}: {exc.strerror or exc}") from None
    from labtools.runs import OutputError, check_folder

    try:
        check_folder(path.parent, "--json")
    except OutputError as exc:
        raise UsageError(str(exc)) from None
    return path


def checked_config(args):
    """The sweep's SweepConfig and the --json path, from arguments checked before any
    measurement: device, output paths, then the implementations (loading the plugins
    takes seconds, so it comes last)."""
    from labtools import runs
    from labtools.sweep import B512, SweepConfig, default_shapes

    device = resolve_device(args.device)
    if args.b512:
        shapes, dtypes = (B512,), ("float32",)
    else:
        shapes = args.shapes or default_shapes(device, args.quick)
        dtypes = tuple(args.dtypes)
    json_path = check_json_path(args.json) if args.json else None
    if args.out is not None:
        runs.check_folder(args.out)
        runs.check_empty(args.out)
    impls = tuple(args.impls or ())
    check_impls(args.op, device, impls)
    cap = args.time_cap or (1.0 if device == "cuda" else 0.5)
    config = SweepConfig(
        args.op, device, shapes, dtypes, impls, seed=args.seed, time_cap_s=cap, rounds=args.rounds
    )
    return config, json_path


def main(args) -> int:
    from labtools import ceilings, runs
    from labtools.atomic import atomic_write_text
    from labtools.sweep import format_table, run_sweep, shape_str, summarize

    config, json_path = checked_config(args)
    device, shapes = config.device, config.shapes
    named_file_only = json_path is not None and args.out is None
    folder = (
        nullcontext() if named_file_only else runs.open_run("bench", args.out, command_line=args.command_line)
    )
    with folder as run:
        if device == "cpu" and not args.shapes and not args.b512:
            print(
                f"lab bench: no CUDA device: CPU implementations only, at small shapes "
                f"({', '.join(shape_str(s) for s in shapes)})",
                file=sys.stderr,
            )
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
        text = json.dumps(sweep.to_dict(), indent=1) + "\n"
        if json_path is not None:
            atomic_write_text(json_path, text)
            print(f"wrote {json_path}")
        if run is not None:
            path = run.write_text(f"sweep_{args.op}.json", text)
            status = "failed" if sweep.failed else "ok"
            run.finish(device=device, status=status, exit_status=1 if sweep.failed else 0)
            print(f"wrote {path} (run folder {run.path})")
    return 1 if sweep.failed else 0
