"""lab ncu: profile under Nsight Compute and say what bounds each kernel."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from labtools import cli
from labtools.cli import UsageError


def configure(parser) -> None:
    from labtools.ncu import DEFAULT_SECTIONS

    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--csv", type=cli.input_file, help="parse an existing `ncu --csv --page details` file")
    src.add_argument(
        "--import",
        dest="report",
        type=cli.input_file,
        help="export and parse an existing .ncu-rep report",
    )
    src.add_argument(
        "--impl",
        help="profile registered implementations, comma-separated: one launch a case (implementation x "
        "shape x dtype it accepts), after warm-up, in one process",
    )
    src.add_argument(
        "--cmd", nargs=argparse.REMAINDER, help="profile this command (put it last: --cmd python x.py)"
    )
    parser.add_argument(
        "--shape",
        type=cli.shapes,
        default="16384x4096",
        help="MxN[,MxN...], with --impl (default: %(default)s)",
    )
    parser.add_argument(
        "--dtype",
        type=cli.dtypes,
        default="float32",
        help="storage dtype[s], comma-separated, with --impl (default: %(default)s)",
    )
    parser.add_argument(
        "--section", action="append", help=f"ncu section (repeatable; default: {' '.join(DEFAULT_SECTIONS)})"
    )
    parser.add_argument("--metrics", help="comma-separated raw metrics (default: the warp-stall ratios)")
    parser.add_argument("-k", "--kernel", help="only kernels whose name matches this regex")
    parser.add_argument(
        "--launch-skip", type=cli.nonnegative_int, default=0, help="kernel launches to skip before profiling"
    )
    parser.add_argument(
        "--launch-count", type=cli.positive_int, help="kernel launches to profile (default: all)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="folder for the report and CSV (default: a new out/ncu-<time>-<id>/; locked while profiling)",
    )
    parser.add_argument("--json", action="store_true", help="print per-kernel summaries as JSON")


def read_csv(path: Path, option: str = "--csv"):
    """Parse an ncu CSV file, or raise UsageError naming the file and what is wrong."""
    from labtools import ncu

    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"argument {option}: {path} is not text (not UTF-8 at byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"argument {option}: cannot read {path}: {exc.strerror or exc}") from None
    try:
        return ncu.parse_csv(text)
    except ncu.NcuCsvError as exc:
        raise UsageError(f"argument {option}: {path}: {exc}") from None


def main(args) -> int:
    from labtools import ncu, runs

    if args.csv:
        kernels = read_csv(args.csv)
    else:
        if args.cmd is not None and not args.cmd:
            raise UsageError("argument --cmd: needs a command to profile, e.g. --cmd python x.py")
        if args.impl:
            for name in args.impl.split(","):
                _check_impl(name.strip())
        run = runs.open_run("ncu", args.out, command_line=args.command_line)
        try:
            if args.report:
                text = ncu.export_csv(args.report, run.file("ncu_details.csv"))
                try:
                    kernels = ncu.parse_csv(text)
                except ncu.NcuCsvError as exc:
                    raise UsageError(f"argument --import: {args.report}: {exc}") from None
            else:
                cfg = ncu.NcuConfig(
                    sections=tuple(args.section) if args.section else ncu.DEFAULT_SECTIONS,
                    metrics=tuple(m for m in args.metrics.split(",") if m)
                    if args.metrics
                    else ncu.DEFAULT_METRICS,
                    kernel_regex=args.kernel,
                    launch_skip=args.launch_skip,
                    launch_count=args.launch_count,
                    profile_from_start=not args.impl,
                )
                if args.impl:
                    shapes = ",".join(f"{m}x{n}" for m, n in args.shape)
                    dtypes = ",".join(args.dtype)
                    case_list = ncu.cases(args.impl, shapes, dtypes)
                    if not case_list:
                        raise UsageError(
                            f"argument --impl: {args.impl} accepts none of the shapes and dtypes given"
                        )
                    target = ncu.launch_target(args.impl, shapes, dtypes)
                else:
                    target = args.cmd
                try:
                    kernels, csv_path = ncu.profile(target, run.path, cfg)
                except FileNotFoundError as exc:  # no ncu on this machine
                    raise UsageError(str(exc)) from None
                except ncu.NcuCsvError as exc:  # an export this parser does not know (the CSV is kept)
                    raise UsageError(f"ncu's export {run.path / 'ncu_details.csv'}: {exc}") from None
                if args.impl:
                    kernels = ncu.label_cases(kernels, case_list)
                if csv_path is not None:
                    print(f"wrote {csv_path} and {csv_path.parent / 'ncu.ncu-rep'}")
            run.write_json("ncu_summary.json", [k.summary() for k in kernels])
            run.finish(device="cuda", status="ok" if kernels else "no kernels")
        finally:
            run.close()
    if not kernels:
        print("no kernels profiled (check the --kernel filter)")
        return 1
    print(json.dumps([k.summary() for k in kernels], indent=1) if args.json else ncu.format_table(kernels))
    return 0


def _check_impl(name: str) -> None:
    from labtools import registry

    try:
        registry.get(name)
    except KeyError:
        known = ", ".join(i.name for i in registry.implementations()) or "none"
        raise UsageError(f"argument --impl: no implementation {name!r}; registered: {known}") from None
