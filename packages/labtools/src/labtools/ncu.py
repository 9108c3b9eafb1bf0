"""Nsight Compute: profile a command, read its CSV, and say what bounds each kernel.

`profile` runs a command under ``ncu --clock-control none`` (clocks left as the driver
sets them, so durations compare with the harness's event timings, which do not lock
clocks either) into a report file, then exports the report with
``ncu --import R --csv --page details``: the long format, one row per metric::

    "ID","Process ID",...,"Kernel Name",...,"Section Name","Metric Name","Metric Unit","Metric Value"

`parse_csv` turns that into one `KernelProfile` per profiled launch. It finds the header
after any preamble (``==PROF==`` lines, the program's own output), keys columns by name
(ncu versions add and drop columns), and reads values with thousands separators, in
any time or throughput unit, and "n/a" as missing.

Stall reasons come from the raw metrics
``smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio`` (cycles a warp
spends stalled on <reason> per issued instruction), which `profile` requests by default.

`python -m labtools.ncu launch NAME MxN DTYPE` is the target `lab ncu --impl` profiles:
it warms a registered implementation up (compile, autotune) with the profiler off, then
runs it once between cudaProfilerStart/Stop (ncu runs with --profile-from-start off).
"""

from __future__ import annotations

import csv
import io
import math
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

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
DEFAULT_METRICS = tuple(STALL_METRIC.format(r) for r in STALL_REASONS)
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
            "sm_pct": self.sm_pct,
            "achieved_occupancy_pct": self.achieved_occupancy_pct,
            "registers_per_thread": self.registers_per_thread,
            "top_stalls": self.stalls[:3],
            "verdict": self.verdict(),
        }


_REQUIRED = ("ID", "Kernel Name", "Metric Name", "Metric Value")
_PER_LAUNCH = ("Block Size", "Grid Size", "Device", "CC", "Stream", "Context")
_MISSING = ("", "n/a")  # ncu's words for "not collected"


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
    try:
        reader = csv.reader(io.StringIO("\n".join(lines[start:])), strict=True)
        header = next(reader)
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
            if not (row["ID"].strip().isascii() and row["ID"].strip().isdigit()):
                raise NcuCsvError(f"line {line_no}, column ID: {row['ID'][:40]!r} is not a launch number")
            k = kernels.get(row["ID"])
            if k is None:
                if not row["Kernel Name"].strip():
                    raise NcuCsvError(f"line {line_no}, column Kernel Name: empty")
                info = {c: row[c] for c in _PER_LAUNCH if row.get(c)}
                k = kernels[row["ID"]] = KernelProfile(row["ID"], row["Kernel Name"], info)
            text_value = row["Metric Value"]
            unit = (row.get("Metric Unit") or "").strip()
            value = _metric_value(
                text_value, unit, f"line {line_no}, column Metric Value ({row['Metric Name']})"
            )
            section = row.get("Section Name") or ""
            k.metrics.append(Metric(section, row["Metric Name"], unit, value, text_value))
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
) -> tuple[list[KernelProfile], Path]:
    """Run `target` under ncu into out_dir/ncu.ncu-rep, export out_dir/ncu_details.csv, parse it."""
    cfg = cfg or NcuConfig()
    if shutil.which(cfg.ncu) is None:
        raise FileNotFoundError(f"{cfg.ncu!r} not found on PATH (Nsight Compute ships with the CUDA toolkit)")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = out_dir / "ncu.ncu-rep"
    subprocess.run(profile_command(target, report, cfg), check=True)
    csv_path = out_dir / "ncu_details.csv"
    return parse_csv(export_csv(report, csv_path, cfg.ncu)), csv_path


def launch_target(impl_name: str, shape: str, dtype: str) -> list[str]:
    """The command that runs one registered implementation once under the profiler."""
    return [sys.executable, "-m", "labtools.ncu", "launch", impl_name, shape, dtype]


def format_table(kernels: list[KernelProfile], style: str = "auto") -> str:
    """The kernels' headline numbers as a table, then one verdict line per kernel."""
    from labtools.tables import render

    def rounded(v, digits=1):
        return None if v is None else round(v, digits)

    rows = [
        (
            k.id,
            k.name[:40],
            rounded(k.duration_us),
            rounded(k.dram_pct),
            rounded(k.sm_pct),
            rounded(k.achieved_occupancy_pct),
            k.registers_per_thread,
            ", ".join(f"{r} {v:.2g}" for r, v in k.stalls[:3]),
        )
        for k in kernels
    ]
    headers = ("id", "kernel", "us", "DRAM %", "SM %", "occ %", "regs", "top stalls")
    table = render(headers, rows, style=style, align="rlrrrrrl")
    verdicts = [f"{k.id:>4}  {k.name[:39]}: {k.verdict()}" for k in kernels]
    return "\n".join([table, "", *verdicts])


def _launch_once(impl_name: str, shape_text: str, dtype: str) -> None:
    import torch

    from labtools import bench, registry
    from labtools.sweep import parse_shapes

    impl = registry.get(impl_name)
    (shape,) = parse_shapes(shape_text)
    inputs = bench.make_inputs(impl, shape, dtype)
    for _ in range(3):  # compile, autotune, load modules: not profiled
        impl.fn(*inputs)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    impl.fn(*inputs)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] != "launch":
        sys.exit("usage: python -m labtools.ncu launch IMPL_NAME MxN DTYPE")
    _launch_once(*sys.argv[2:])
