"""lab ncu: profile under Nsight Compute and say what bounds each kernel."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def configure(parser) -> None:
    from labtools.ncu import DEFAULT_SECTIONS

    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--csv", type=Path, help="parse an existing `ncu --csv --page details` file")
    src.add_argument(
        "--import", dest="report", type=Path, help="export and parse an existing .ncu-rep report"
    )
    src.add_argument("--impl", help="profile one registered implementation (one launch, after warm-up)")
    src.add_argument(
        "--cmd", nargs=argparse.REMAINDER, help="profile this command (put it last: --cmd python x.py)"
    )
    parser.add_argument("--shape", default="16384x4096", help="with --impl (default: %(default)s)")
    parser.add_argument("--dtype", default="float32", help="with --impl (default: %(default)s)")
    parser.add_argument(
        "--section", action="append", help=f"ncu section (repeatable; default: {' '.join(DEFAULT_SECTIONS)})"
    )
    parser.add_argument("--metrics", help="comma-separated raw metrics (default: the warp-stall ratios)")
    parser.add_argument("-k", "--kernel", help="only kernels whose name matches this regex")
    parser.add_argument("--launch-skip", type=int, default=0)
    parser.add_argument("--launch-count", type=int)
    parser.add_argument(
        "--out", type=Path, default=Path("out/ncu"), help="report and CSV folder (default: %(default)s)"
    )
    parser.add_argument("--json", action="store_true", help="print per-kernel summaries as JSON")


def main(args) -> int:
    from labtools import ncu

    if args.csv:
        kernels = ncu.parse_csv(args.csv.read_text())
    elif args.report:
        args.out.mkdir(parents=True, exist_ok=True)
        kernels = ncu.parse_csv(ncu.export_csv(args.report, args.out / "ncu_details.csv"))
    else:
        cfg = ncu.NcuConfig(
            sections=tuple(args.section) if args.section else ncu.DEFAULT_SECTIONS,
            metrics=tuple(m for m in args.metrics.split(",") if m) if args.metrics else ncu.DEFAULT_METRICS,
            kernel_regex=args.kernel,
            launch_skip=args.launch_skip,
            launch_count=args.launch_count,
            profile_from_start=not args.impl,
        )
        target = ncu.launch_target(args.impl, args.shape, args.dtype) if args.impl else args.cmd
        if not target:
            raise SystemExit("lab ncu: --cmd needs a command to profile")
        kernels, csv_path = ncu.profile(target, args.out, cfg)
        print(f"wrote {csv_path} and {csv_path.parent / 'ncu.ncu-rep'}")
    if not kernels:
        print("no kernels profiled (check the --kernel filter)")
        return 1
    print(json.dumps([k.summary() for k in kernels], indent=1) if args.json else ncu.format_table(kernels))
    return 0
