"""lab env: what this machine is and which backends run here."""

from __future__ import annotations

import json


def configure(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def main(args) -> int:
    from labtools.env import collect, format_table

    env = collect()
    print(json.dumps(env.to_dict(), indent=2) if args.json else format_table(env))
    return 0
