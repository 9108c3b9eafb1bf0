"""lab compare: two sweeps of one op side by side, or two implementations within one sweep.

    lab compare BEFORE.json AFTER.json               # each implementation, after / before
    lab compare SWEEP.json --against quack.softmax   # each implementation against a peer's

A ratio is the reference's time over this one's (above 1: this one is faster), for device time
(the median of CUDA events, L2 flushed) and call time (wall per call, back to back). A point
slower than its reference by more than --tolerance in either is listed after the table, and
--fail-slower makes that an exit status of 1 (for scripts that guard a change).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from labtools.cli import UsageError, input_file, names


def configure(parser) -> None:
    parser.add_argument("sweeps", nargs="+", type=input_file, help="sweep JSON files (lab bench --json)")
    parser.add_argument(
        "--against", metavar="IMPL", help="compare every implementation with IMPL within one sweep"
    )
    parser.add_argument("--impls", type=names, help="only these implementations (comma-separated)")
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.01,
        help="a point slower than its reference by more than this fraction is listed (default 0.01)",
    )
    parser.add_argument("--fail-slower", action="store_true", help="exit 1 when a point is listed")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")


Key = tuple[str, str, str]  # (impl, shape "MxN", dtype)


def load(path: Path) -> tuple[dict, dict[Key, dict]]:
    """The sweep's header and its records keyed by (impl, shape, dtype); one line on a bad file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        records = data["records"]
        keyed = {(r["impl"], "x".join(map(str, r["shape"])), r["dtype"]): r for r in records}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path}: not a lab bench sweep ({type(exc).__name__}: {exc})") from None
    return data, keyed


def _ratio(ref: dict, rec: dict, field: str) -> float | None:
    a, b = ref.get(field), rec.get(field)
    if not (isinstance(a, int | float) and isinstance(b, int | float)) or not (a > 0 and b > 0):
        return None
    if not (math.isfinite(a) and math.isfinite(b)):
        return None
    return a / b


def pairs(args) -> tuple[list[tuple[Key, dict, dict]], str]:
    """(key, reference record, record) for every point both sides have, in the sweep's order."""
    if args.against:
        if len(args.sweeps) != 1:
            raise UsageError("--against compares within one sweep: give exactly one sweep file")
        _, recs = load(args.sweeps[0])
        if not any(k[0] == args.against for k in recs):
            impls = ", ".join(sorted({k[0] for k in recs}))
            raise UsageError(f"--against {args.against}: not in the sweep (it has {impls})")
        out = [
            (k, recs[(args.against, k[1], k[2])], r)
            for k, r in recs.items()
            if k[0] != args.against and (args.against, k[1], k[2]) in recs
        ]
        return out, f"{args.against} / impl"
    if len(args.sweeps) != 2:
        raise UsageError("give two sweep files (before, after), or one with --against IMPL")
    (head_a, before), (head_b, after) = load(args.sweeps[0]), load(args.sweeps[1])
    if head_a.get("op") != head_b.get("op"):
        raise UsageError(f"the sweeps time different ops: {head_a.get('op')} and {head_b.get('op')}")
    return [(k, before[k], r) for k, r in after.items() if k in before], "before / after"


def main(args) -> int:
    from labtools.tables import render

    points, what = pairs(args)
    if args.impls:
        points = [p for p in points if p[0][0] in args.impls]
    if not points:
        raise UsageError("no point is in both sides of the comparison")
    rows, slower = [], []
    for (impl, shape, dtype), ref, rec in points:
        dev, call = _ratio(ref, rec, "median_us"), _ratio(ref, rec, "call_us")
        rows.append([impl, shape, dtype, ref.get("median_us"), rec.get("median_us"), dev, call])
        worst = min((r for r in (dev, call) if r is not None), default=None)
        if worst is not None and worst < 1 - args.tolerance:
            slower.append(f"{impl} {shape} {dtype}: device {dev or 0:.3f}, call {call or 0:.3f}")
    rows = [[*r[:3], *(None if v is None else round(v, 3) for v in r[3:])] for r in rows]
    headers = ["impl", "shape", "dtype", "ref us", "us", f"device {what}", f"call {what}"]
    print(render(headers, rows, style="markdown" if args.markdown else "auto"))
    print(
        f"\n{len(slower)} of {len(rows)} points slower than the reference by more than {args.tolerance:.1%}"
    )
    for line in slower:
        print("  " + line)
    return 1 if slower and args.fail_slower else 0
