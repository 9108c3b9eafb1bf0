"""Nsight Compute: profile a command, read its CSV, and say what bounds each kernel.

`profile` runs a command under ``ncu --clock-control none`` (clocks left as the driver
sets them, so durations compare with the harness's event timings, which do not lock
clocks either) into a report file, then exports the report with
``ncu --import R --csv --page details``: the long format, one row per metric::

    "ID","Process ID",...,"Kernel Name",...,"Section Name","Metric Name","Metric Unit","Metric Value"

`parse_csv` turns that into one `KernelProfile` per profiled launch. It finds the header
after any preamble (``==PROF==`` lines, the program's own output), keys columns by name
(ncu versions add and drop columns), and reads values with thousands separators, in
any time or throughput unit, and "n/a" or "no data" as missing.

Stall reasons come from the raw metrics
``smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio`` (cycles a warp
spends stalled on <reason> per issued instruction), which `profile` requests by default.

`lab ncu --impl` profiles many cases in one process and one ncu session; the target that
runs them, and the split of the profiles by case, are in `labtools.ncu_cases`. The command
that makes the CSV, its parser and the verdict stay in this file: they agree on metric names
and units that ncu versions change.
"""

from __future__ import annotations

import csv
import io
import math
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

# The case helpers live in labtools.ncu_cases; re-exported for `ncu.cases` and the like.
from labtools.ncu_cases import MARKER_KERNEL as MARKER_KERNEL
from labtools.ncu_cases import case_label as case_label
from labtools.ncu_cases import cases as cases
from labtools.ncu_cases import label_cases as label_cases
from labtools.ncu_cases import launch_target as launch_target

DEFAULT_SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats")
STALL_REASONS = (
    "long_scoreboard",
    "short_scoreboard",
    "barrier",
    "membar",
    "mio_throttle",
    "lg_throttle",
    "math_pipe_throttle",
    "tex_throttle",
    "wait",
    "not_selected",
    "selected",
    "dispatch_stall",
    "no_instruction",
    "drain",
    "imc_miss",
    "branch_resolving",
    "sleeping",
    "misc",
)
STALL_METRIC = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
# the bytes DRAM moved: set against the bytes the op must move, they show re-reads
DRAM_BYTES_METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
DEFAULT_METRICS = tuple(STALL_METRIC.format(r) for r in STALL_REASONS) + DRAM_BYTES_METRICS
_STALL_RE = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")

# --- values and units --------------------------------------------------------------

_TO_US = {
    "nsecond": 1e-3,
    "ns": 1e-3,
    "usecond": 1.0,
    "us": 1.0,
    "msecond": 1e3,
    "ms": 1e3,
    "second": 1e6,
    "s": 1e6,
}
_TO_GBPS = {
    "byte/second": 1e-9,
    "Kbyte/second": 1e-6,
    "Mbyte/second": 1e-3,
    "Gbyte/second": 1.0,
    "Tbyte/second": 1e3,
    "B/s": 1e-9,
    "KB/s": 1e-6,
    "MB/s": 1e-3,
    "GB/s": 1.0,
    "TB/s": 1e3,
}
_PCT = {"%": 1.0}
_TO_MB = {
    "byte": 1e-6,
    "Kbyte": 1e-3,
    "Mbyte": 1.0,
    "Gbyte": 1e3,
    "Tbyte": 1e6,
    "B": 1e-6,
    "KB": 1e-3,
    "MB": 1.0,
    "GB": 1e3,
}
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


@dataclass(frozen=True)
class Metric:
    section: str
    name: str
    unit: str
    value: float | None
    text: str  # as ncu printed it


# --- kernels -----------------------------------------------------------------------


@dataclass
class KernelProfile:
    """The metrics of one profiled kernel launch."""

    id: str
    name: str
    info: dict[str, str] = field(
        default_factory=dict
    )  # the other per-launch columns: Block Size, Grid Size, ...
    metrics: list[Metric] = field(default_factory=list)

    def find(self, names: tuple[str, ...], units: tuple[str, ...] | None = None) -> Metric | None:
        """The first metric whose name is one of `names` (and unit one of `units`)."""
        for name in names:
            for m in self.metrics:
                if m.name == name and m.value is not None and (units is None or m.unit in units):
                    return m
        return None

    def value(self, names: tuple[str, ...], scale: dict[str, float]) -> float | None:
        """The first of `names` measured in one of `scale`'s units, converted by its factor.
        The unit tells apart metrics that share a name: "Memory Throughput" is a % in
        SpeedOfLight and a rate in MemoryWorkloadAnalysis."""
        m = self.find(names, tuple(scale))
        return None if m is None else m.value * scale[m.unit]

    @property
    def duration_us(self) -> float | None:
        return self.value(("Duration", "gpu__time_duration.sum", "gpu__time_duration"), _TO_US)

    @property
    def dram_pct(self) -> float | None:
        return self.value(("DRAM Throughput", "dram__throughput.avg.pct_of_peak_sustained_elapsed"), _PCT)

    @property
    def dram_gbps(self) -> float | None:
        return self.value(("Memory Throughput", "dram__bytes.sum.per_second"), _TO_GBPS)

    @property
    def dram_read_mb(self) -> float | None:
        return self.value((DRAM_BYTES_METRICS[0],), _TO_MB)

    @property
    def dram_write_mb(self) -> float | None:
        return self.value((DRAM_BYTES_METRICS[1],), _TO_MB)

    @property
    def sm_pct(self) -> float | None:
        return self.value(
            ("Compute (SM) Throughput", "sm__throughput.avg.pct_of_peak_sustained_elapsed"), _PCT
        )

    @property
    def achieved_occupancy_pct(self) -> float | None:
        return self.value(("Achieved Occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active"), _PCT)

    @property
    def registers_per_thread(self) -> int | None:
        m = self.find(("Registers Per Thread", "launch__registers_per_thread"))
        return None if m is None else int(m.value)

    @property
    def stalls(self) -> list[tuple[str, float]]:
        """(reason, cycles stalled per issued instruction), largest first."""
        out = []
        for m in self.metrics:
            hit = _STALL_RE.match(m.name)
            if hit and m.value is not None:
                out.append((hit.group(1), m.value))
        return sorted(out, key=lambda rv: -rv[1])

    def verdict(self) -> str:
        """One line: what bounds this kernel, from DRAM vs SM throughput, occupancy and stalls."""
        dram, sm = self.dram_pct, self.sm_pct
        stalls = self.stalls
        tail = ""
        if self.achieved_occupancy_pct is not None:
            tail += f"; occupancy {self.achieved_occupancy_pct:.0f}%"
        if stalls:
            tail += f"; top stall: {stalls[0][0]} ({stalls[0][1]:.2g} cycles/issue)"
        if dram is None or sm is None:
            return (
                "no verdict: DRAM and SM throughput not collected (profile with --section SpeedOfLight)"
                + tail
            )
        load = f"DRAM {dram:.0f}% / SM {sm:.0f}% of peak"
        if dram >= 75:
            return f"memory-bound ({load}): at the bandwidth roof; only fewer bytes would help" + tail
        if sm >= 75:
            return f"compute-bound ({load}): cut instructions per element (exp, division, index math)" + tail
        if max(dram, sm) < 40:
            return f"latency-bound ({load}): neither unit is busy; more bytes in flight per SM needed" + tail
        return f"under-utilized ({load}): neither roof reached" + tail

    def summary(self) -> dict:
        return {
            "id": self.id,
            "kernel": self.name,
            **self.info,
            "duration_us": self.duration_us,
            "dram_pct": self.dram_pct,
            "dram_gbps": self.dram_gbps,
            "dram_read_mb": self.dram_read_mb,
            "dram_write_mb": self.dram_write_mb,
            "sm_pct": self.sm_pct,
            "achieved_occupancy_pct": self.achieved_occupancy_pct,
            "registers_per_thread": self.registers_per_thread,
            "top_stalls": self.stalls[:3],
            "verdict": self.verdict(),
        }


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


# --- running ncu -------------------------------------------------------------------


@dataclass
class NcuConfig:
    sections: tuple[str, ...] = DEFAULT_SECTIONS
    metrics: tuple[str, ...] = DEFAULT_METRICS
    kernel_regex: str | None = None  # --kernel-name regex:...
    launch_skip: int = 0
    launch_count: int | None = None
    profile_from_start: bool = True  # False: only between cudaProfilerStart/Stop
    ncu: str = "ncu"


def profile_command(target: list[str], report: Path, cfg: NcuConfig) -> list[str]:
    cmd = [cfg.ncu, "--clock-control", "none", "--target-processes", "all"]
    cmd += ["--force-overwrite", "--export", str(report)]
    for s in cfg.sections:
        cmd += ["--section", s]
    if cfg.metrics:
        cmd += ["--metrics", ",".join(cfg.metrics)]
    if cfg.kernel_regex:
        cmd += ["--kernel-name", f"regex:{cfg.kernel_regex}"]
    if cfg.launch_skip:
        cmd += ["--launch-skip", str(cfg.launch_skip)]
    if cfg.launch_count:
        cmd += ["--launch-count", str(cfg.launch_count)]
    if not cfg.profile_from_start:
        cmd += ["--profile-from-start", "off"]
    return cmd + list(target)


def export_command(report: Path, ncu: str = "ncu") -> list[str]:
    return [ncu, "--import", str(report), "--csv", "--page", "details"]


def export_csv(report: Path, csv_path: Path, ncu: str = "ncu") -> str:
    from labtools.atomic import atomic_write_text

    text = subprocess.run(export_command(report, ncu), check=True, capture_output=True, text=True).stdout
    atomic_write_text(csv_path, text)
    return text


def profile(
    target: list[str], out_dir: Path, cfg: NcuConfig | None = None
) -> tuple[list[KernelProfile], Path | None]:
    """Run `target` under ncu into out_dir/ncu.ncu-rep, export out_dir/ncu_details.csv, parse it.
    ([], None) when ncu profiled no kernel (it then writes no report)."""
    cfg = cfg or NcuConfig()
    if shutil.which(cfg.ncu) is None:
        raise FileNotFoundError(f"{cfg.ncu!r} not found on PATH (Nsight Compute ships with the CUDA toolkit)")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = out_dir / "ncu.ncu-rep"
    report.unlink(missing_ok=True)  # an earlier run's report must not pass for this one's
    subprocess.run(profile_command(target, report, cfg), check=True)
    if not report.exists():
        return [], None
    csv_path = out_dir / "ncu_details.csv"
    return parse_csv(export_csv(report, csv_path, cfg.ncu)), csv_path


def format_table(kernels: list[KernelProfile], style: str = "auto") -> str:
    """The kernels' headline numbers as a table, then one verdict line per kernel."""
    from labtools.tables import render

    def rounded(v, digits=1):
        return None if v is None else round(v, digits)

    rows = [
        (
            k.id,
            (k.info["case"] + ": " if "case" in k.info else "") + k.name[:40],
            rounded(k.duration_us),
            rounded(k.dram_pct),
            rounded(k.sm_pct),
            rounded(k.achieved_occupancy_pct),
            k.registers_per_thread,
            None if k.dram_read_mb is None else f"{k.dram_read_mb:.0f}/{k.dram_write_mb or 0:.0f}",
            ", ".join(f"{r} {v:.2g}" for r, v in k.stalls[:3]),
        )
        for k in kernels
    ]
    headers = ("id", "kernel", "us", "DRAM %", "SM %", "occ %", "regs", "DRAM MB r/w", "top stalls")
    table = render(headers, rows, style=style, align="rlrrrrrrl")
    verdicts = [f"{k.id:>4}  {k.name[:39]}: {k.verdict()}" for k in kernels]
    return "\n".join([table, "", *verdicts])
