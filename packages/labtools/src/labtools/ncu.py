"""Nsight Compute: profile a command, read its CSV, and say what bounds each kernel.

`profile` runs a command under ``ncu --clock-control none`` (clocks left as the driver
sets them, so durations compare with the harness's event timings, which do not lock
clocks either) into a report file, exports the report with
``ncu --import R --csv --page details`` and parses it; `format_table` prints the result.

Callers name everything through this module (`ncu.parse_csv`, `ncu.KernelProfile`,
`ncu.cases`); the parts live by job in siblings and are re-exported here:

- `labtools.ncu_metrics`: the metric names requested and read, `KernelProfile`, the verdict;
- `labtools.ncu_csv`: `parse_csv`, the export read into `KernelProfile`s;
- `labtools.ncu_cases`: the target `lab ncu --impl` runs (many cases in one process and
  one ncu session) and the split of its profiles by case.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Re-exported so that `ncu.X` keeps naming every part.
from labtools.ncu_cases import cases as cases
from labtools.ncu_cases import label_cases as label_cases
from labtools.ncu_cases import launch_target as launch_target
from labtools.ncu_csv import NcuCsvError as NcuCsvError
from labtools.ncu_csv import number as number
from labtools.ncu_csv import parse_csv
from labtools.ncu_metrics import DEFAULT_METRICS, DEFAULT_SECTIONS, KernelProfile
from labtools.ncu_metrics import STALL_METRIC as STALL_METRIC


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
