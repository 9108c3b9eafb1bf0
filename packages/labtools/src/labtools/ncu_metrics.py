"""What one profiled kernel launch measured, and what bounds it.

`KernelProfile` holds one launch's metrics as ncu reports them (section, name, unit, value)
and reads the headline numbers from them: duration, DRAM and SM throughput, occupancy,
registers, DRAM bytes and stall reasons, each converted from whatever time, throughput or
size unit ncu printed. `verdict` says in one line what bounds the kernel.

Stall reasons come from the raw metrics
``smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio`` (cycles a warp
spends stalled on <reason> per issued instruction), which `labtools.ncu.profile` requests by
default. The names it requests (DEFAULT_SECTIONS, DEFAULT_METRICS) are defined here, next to
the properties that read them back: the two must agree, and ncu versions rename metrics.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

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
