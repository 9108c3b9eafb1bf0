"""`ncu --csv --page details` exports, read into `KernelProfile`s.

The export is the long format, one row per metric::

    "ID","Process ID",...,"Kernel Name",...,"Section Name","Metric Name","Metric Unit","Metric Value"

`parse_csv` turns that into one `KernelProfile` per profiled launch. It finds the header
after any preamble (``==PROF==`` lines, the program's own output), keys columns by name
(ncu versions add and drop columns), reads values with thousands separators, keeps each
value's unit (the profile converts), and reads "n/a" or "no data" as missing. Text that
is not a whole, sane export raises `NcuCsvError`.
"""

from __future__ import annotations

import csv
import io
import math
import re

from labtools.ncu_metrics import KernelProfile, Metric

_GROUPED = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?([eE][+-]?\d+)?$")


def number(text: str | None) -> float | None:
    """A metric value as a float: "1,234.5" -> 1234.5; "n/a", "" -> None."""
    if text is None:
        return None
    s = text.strip().strip('"').strip()
    if _GROUPED.match(s):
        s = s.replace(",", "")
    try:
        return float(s)
    except ValueError:
        return None


_REQUIRED = ("ID", "Kernel Name", "Metric Name", "Metric Value")
_PER_LAUNCH = ("Block Size", "Grid Size", "Device", "CC", "Stream", "Context")
_MISSING = ("", "n/a", "no data")  # ncu's words for "not collected" (MemoryWorkloadAnalysis: "no data")


class NcuCsvError(ValueError):
    """The text is not a whole, sane `ncu --csv --page details` export; the message
    names the line and column at fault."""


def _metric_value(text: str, unit: str, where: str) -> float | None:
    """A metric's value: None when ncu did not collect it or it is a word
    ("CachePreferNone") of a unit-less metric; a finite number >= 0 otherwise.
    Every counter, rate, ratio and percentage ncu reports is >= 0, so a negative, NaN or
    infinite value means a damaged file, and so does a word where a unit says number."""
    stripped = text.strip()
    if stripped.lower() in _MISSING:
        return None
    value = number(stripped)
    if value is None:
        try:  # number() refuses what is not plainly numeric; float() would take "nan", "inf"
            value = float(stripped)
        except ValueError:
            if unit:
                raise NcuCsvError(f"{where}: {stripped[:40]!r} is not a number (unit {unit!r})") from None
            return None
    if not math.isfinite(value) or value < 0:
        raise NcuCsvError(f"{where}: {stripped[:40]!r} is not a finite number >= 0")
    return value


def parse_csv(text: str) -> list[KernelProfile]:
    """`ncu --csv --page details` output (long format) -> one KernelProfile per launch ID.

    Raises NcuCsvError (and nothing else) on text that is not such an export: no header,
    missing columns, rows with too few or too many fields (a truncated file), or values
    that cannot be metrics (see `_metric_value`)."""
    if not isinstance(text, str):
        raise NcuCsvError(f"expected text, got {type(text).__name__}")
    lines = text.splitlines()
    start = next(
        (k for k, line in enumerate(lines) if '"Kernel Name"' in line and '"Metric Name"' in line), None
    )
    if start is None:
        raise NcuCsvError(
            'no ncu CSV header (a line with "Kernel Name" and "Metric Name") found; '
            "was ncu run with --csv --page details?"
        )
    reader = csv.reader(io.StringIO("\n".join(lines[start:])), strict=True)
    try:
        header = next(reader)
        kernels, last_fields = _read_rows(reader, header, start)
    except csv.Error as exc:
        raise NcuCsvError(
            f"line {start + reader.line_num}: not CSV ({exc}); truncated or damaged file"
        ) from None
    # ncu ends its output with a newline. Without one, the last row must be whole: every
    # column present (ncu omits empty trailing ones only on rows a newline ends) and, as
    # ncu quotes every field, a closing quote last.
    quoted = lines[start].startswith('"')
    last_short = last_fields is not None and len(last_fields) < len(header)
    if not text.endswith(("\n", "\r")) and (last_short or (quoted and not lines[-1].endswith('"'))):
        raise NcuCsvError(f"line {len(lines)}: the file ends inside a row (truncated file)")
    return list(kernels.values())


def _read_rows(reader, header: list[str], start: int) -> tuple[dict[str, KernelProfile], list[str] | None]:
    """The rows under `header` (on line start + 1) as KernelProfiles by launch ID, and the
    last row's fields."""
    missing = [c for c in _REQUIRED if c not in header]
    if missing:
        raise NcuCsvError(f"ncu CSV lacks column(s) {missing} (line {start + 1}); got {header}")
    if len(set(header)) != len(header):
        raise NcuCsvError(f"ncu CSV header on line {start + 1} repeats a column name")
    # ncu leaves out a row's empty trailing fields (the rule columns), but never the metric
    needed = 1 + max(header.index(c) for c in (*_REQUIRED, "Metric Unit") if c in header)
    kernels: dict[str, KernelProfile] = {}
    last_fields = None
    for fields in reader:
        last_fields = fields
        line_no = start + reader.line_num
        if not fields or fields == header or (len(fields) == 1 and not fields[0].strip()):
            continue  # blank lines, repeated headers
        if not needed <= len(fields) <= len(header):
            raise NcuCsvError(
                f"line {line_no}: {len(fields)} fields for {len(header)} columns "
                f"(at least {needed} expected; truncated or damaged file)"
            )
        row = dict(zip(header, fields + [""] * (len(header) - len(fields)), strict=True))
        if not row["Metric Name"].strip():
            continue  # rule-only rows
        launch = row["ID"].strip()
        if not (launch.isascii() and launch.isdigit()):
            raise NcuCsvError(f"line {line_no}, column ID: {row['ID'][:40]!r} is not a launch number")
        k = kernels.get(row["ID"])
        if k is None:
            if not row["Kernel Name"].strip():
                raise NcuCsvError(f"line {line_no}, column Kernel Name: empty")
            info = {c: row[c] for c in _PER_LAUNCH if row.get(c)}
            k = kernels[row["ID"]] = KernelProfile(row["ID"], row["Kernel Name"], info)
        unit = (row.get("Metric Unit") or "").strip()
        where = f"line {line_no}, column Metric Value ({row['Metric Name']})"
        value = _metric_value(row["Metric Value"], unit, where)
        k.metrics.append(
            Metric(row.get("Section Name") or "", row["Metric Name"], unit, value, row["Metric Value"])
        )
    return kernels, last_fields
