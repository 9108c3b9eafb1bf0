"""lab runs: the run folders under out/, with their command, device, date and status."""

from __future__ import annotations

import json
from pathlib import Path


def configure(parser) -> None:
    parser.add_argument(
        "--root", type=Path, default=Path("out"), help="folder holding the runs (default: %(default)s)"
    )
    parser.add_argument("--json", action="store_true", help="print the list as JSON")


def main(args) -> int:
    from labtools.runs import list_runs
    from labtools.tables import render

    found = list_runs(args.root)
    if args.json:
        print(json.dumps(found, indent=1))
        return 0
    if not found:
        print(f"no runs under {args.root}/")
        return 0
    keys = ("folder", "command", "device", "date", "status", "files")
    print(render(keys, [tuple(r.get(k) for k in keys) for r in found]))
    return 0
