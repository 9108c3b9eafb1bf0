"""The roofline: where each implementation of an op lands under the memory and compute roofs.

x is arithmetic intensity, FLOP per byte of compulsory traffic, and y the achieved
TFLOP/s, both from the op's cost model in `labtools.ops` (softmax: 5 FLOP/element with
exp counted as one; bytes: x read once and y written once, so 0.625 FLOP/byte in fp32
and 1.25 in bf16). The roofs are attainable(I) = min(peak, I * bandwidth):

- bandwidth: the device copy measured in the same sweep (solid) -- the roof a memory-bound
  kernel can actually reach -- and the datasheet HBM figure (dashed) when the device has a
  row in `labtools.ceilings.DATASHEETS`; the datasheet alone when nothing was measured;
- compute: the fp32 CUDA-core rate, measured (an fp32 matmul) and/or datasheet, likewise.

Softmax sits far left of the ridge point, so each dot's height over the bandwidth slope at
its x is its fraction of the bandwidth roof: the percentage printed next to it.

Three figures:

- `plot_seed_roofline` (roofline.png): the lab text's figure -- the four kernel versions
  (naive, shared memory, fused, Triton) as dots at one fp32 shape where all four run,
  torch.compile as a dot beside them and F.softmax as the reference line (a horizontal
  line at its achieved TFLOP/s: a dot under it is slower than F.softmax), under the
  measured roofs. `seed_summary` names the shape of every dot for the manifest.
- `plot_roofline` (roofline_<MxN>.png, one per swept shape): one labelled dot per
  implementation and dtype at that shape; with no seed kernel, roofline.png is this figure
  at every swept shape at once.
- `plot_frac_of_copy`: fraction of the measured copy bandwidth against row length N, one
  panel per dtype, one line per implementation.

The figures are drawn in `labtools.roofline_plot` (re-exported here); every one is
written atomically (`labtools.atomic`) and marks the points the report flags (unstable,
above the copy bandwidth).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from labtools.bench import BenchRecord
from labtools.ceilings import Ceilings, datasheet_for
from labtools.sweep import Shape, Sweep, shape_str

PREFERRED_SHAPE: Shape = (16384, 4096)  # the shape COMMON.md's F.softmax numbers were taken at
# The lab text's four dots (its names, the registry's names), then the framework dots.
SEED_DOTS: tuple[tuple[str, str], ...] = (
    ("naive", "cuda.v1_naive"),
    ("smem", "cuda.v2_shared"),
    ("fused", "cuda.v3_fused"),
    ("triton", "triton.softmax"),
)
COMPILE_DOT: tuple[str, str] = ("torch.compile", "torch.compile.softmax.cuda")
SEED_DTYPE = "float32"
MARKERS = {"float32": "o", "bfloat16": "s", "float16": "^", "float64": "D"}
REFERENCE_COLOR = "black"


@dataclass(frozen=True)
class Roof:
    kind: str  # "bandwidth" (value in GB/s) or "compute" (value in TFLOP/s)
    value: float
    source: str  # "measured" or "datasheet"
    label: str


def roofs(ceilings: Ceilings | None, device_name: str = "") -> list[Roof]:
    """The roofs to draw, the ones the percentages are computed against first in each kind:
    measured when the sweep measured them, the datasheet's otherwise."""
    sheet = ceilings.datasheet if ceilings is not None else None
    sheet = sheet or datasheet_for(device_name or (ceilings.device if ceilings else ""))
    out = []
    if ceilings is not None and ceilings.copy_gbps:
        out.append(
            Roof(
                "bandwidth", ceilings.copy_gbps, "measured", f"measured copy: {ceilings.copy_gbps:,.0f} GB/s"
            )
        )
    if sheet is not None:
        out.append(
            Roof(
                "bandwidth",
                sheet.hbm_gbps,
                "datasheet",
                f"{sheet.name} datasheet HBM: {sheet.hbm_gbps:,.0f} GB/s",
            )
        )
    fp32 = ceilings.matmul_tflops.get("fp32") if ceilings is not None else None
    if fp32:
        out.append(Roof("compute", fp32, "measured", f"measured fp32 matmul: {fp32:,.3g} TFLOP/s"))
    if sheet is not None:
        out.append(
            Roof(
                "compute",
                sheet.fp32_tflops,
                "datasheet",
                f"{sheet.name} datasheet fp32 (CUDA cores): {sheet.fp32_tflops:,.3g} TFLOP/s",
            )
        )
    return out


def primary(roof_list: list[Roof], kind: str) -> Roof | None:
    return next((r for r in roof_list if r.kind == kind), None)


def attainable_tflops(intensity: float, bandwidth_gbps: float, peak_tflops: float | None = None) -> float:
    """The roofline: min(peak compute, intensity x bandwidth), in TFLOP/s."""
    mem = intensity * bandwidth_gbps / 1e3
    return mem if peak_tflops is None else min(peak_tflops, mem)


def ridge_intensity(bandwidth_gbps: float, peak_tflops: float) -> float:
    """FLOP/byte where the bandwidth slope meets the compute roof."""
    return peak_tflops * 1e3 / bandwidth_gbps


@dataclass(frozen=True)
class Dot:
    label: str
    dtype: str
    intensity: float
    tflops: float
    frac_of_roof: float | None
    is_reference: bool


def dots(records: list[BenchRecord], roof_list: list[Roof]) -> list[Dot]:
    bw, peak = primary(roof_list, "bandwidth"), primary(roof_list, "compute")
    out = []
    for r in records:
        roof = attainable_tflops(r.intensity, bw.value, peak.value if peak else None) if bw else None
        out.append(
            Dot(r.label, r.dtype, r.intensity, r.tflops, r.tflops / roof if roof else None, r.ref == r.impl)
        )
    return out


def pick_shape(sweep: Sweep, preferred: Shape = PREFERRED_SHAPE) -> Shape:
    """`preferred` when the sweep has it, else the shape with the most records (largest wins ties)."""
    shapes = [tuple(r.shape) for r in sweep.records]
    if not shapes:
        raise ValueError("the sweep has no records to plot")
    if tuple(preferred) in shapes:
        return tuple(preferred)
    return max(set(shapes), key=lambda s: (shapes.count(s), math.prod(s)))


def device_name_of(sweep: Sweep) -> str:
    devices = sweep.environment.get("devices") or []
    if sweep.device == "cuda" and devices:
        return devices[0]["name"]
    return sweep.ceilings.device if sweep.ceilings else sweep.device


# --- the lab text's figure -----------------------------------------------------------


def seed_records(sweep: Sweep, shape: Shape) -> dict[str, BenchRecord]:
    """seed name -> record at `shape` in fp32, for the seed dots and torch.compile present."""
    by_impl = {r.impl: r for r in sweep.at(shape, SEED_DTYPE)}
    return {name: by_impl[impl] for name, impl in (*SEED_DOTS, COMPILE_DOT) if impl in by_impl}


def seed_shape(sweep: Sweep, preferred: Shape = PREFERRED_SHAPE) -> Shape | None:
    """The shape of the seed figure: `preferred` when all four seed kernels ran there in
    fp32, else the largest such shape; failing that, the shape with the most seed dots
    (`preferred`, then the largest, wins ties); None when no seed kernel ran at all."""
    shapes = list(dict.fromkeys(tuple(r.shape) for r in sweep.records if r.dtype == SEED_DTYPE))
    count = {sh: sum(n in seed_records(sweep, sh) for n, _ in SEED_DOTS) for sh in shapes}
    full = [sh for sh in shapes if count[sh] == len(SEED_DOTS)]
    if tuple(preferred) in full:
        return tuple(preferred)
    if full:
        return max(full, key=math.prod)
    some = [sh for sh in shapes if count[sh]]
    return max(some, key=lambda sh: (count[sh], sh == tuple(preferred), math.prod(sh))) if some else None


def reference_record(sweep: Sweep, shape: Shape) -> BenchRecord | None:
    return next((r for r in sweep.at(shape, SEED_DTYPE) if r.ref == r.impl), None)


def seed_summary(sweep: Sweep, shape: Shape | None = None, file: str = "roofline.png") -> dict | None:
    """What the seed figure shows, for manifest.json: each dot with its implementation,
    shape and dtype, the reference line, and the seed kernels missing (and why)."""
    shape = tuple(shape) if shape else seed_shape(sweep)
    if shape is None:
        return None
    roof_list = roofs(sweep.ceilings, device_name_of(sweep))
    recs = seed_records(sweep, shape)
    ref = reference_record(sweep, shape)

    def entry(r: BenchRecord) -> dict:
        (dot,) = dots([r], roof_list)
        return {
            "impl": r.impl,
            "label": r.label,
            "shape": list(r.shape),
            "dtype": r.dtype,
            "tflops": r.tflops,
            "gbps": r.gbps,
            "frac_of_roof": dot.frac_of_roof,
            "median_us": r.median_us,
            "call_us": r.call_us,
            "unstable": r.unstable,
        }

    missing = {}
    for name, impl in (*SEED_DOTS, COMPILE_DOT):
        if name in recs:
            continue
        why = [
            e["why"] for e in sweep.skipped + sweep.failed if e["impl"] == impl and tuple(e["shape"]) == shape
        ]
        missing[name] = why[0] if why else f"{impl} was not timed at {shape_str(shape)} {SEED_DTYPE}"
    return {
        "file": file,
        "shape": list(shape),
        "dtype": SEED_DTYPE,
        "dots": {name: entry(r) for name, r in recs.items()},
        "reference_line": None if ref is None else entry(ref),
        "missing": missing,
    }


def plot_names(op: str) -> tuple[str, str]:
    """File names of the headline roofline and the fraction-of-copy figure: roofline.png /
    frac_of_copy.png for softmax, suffixed with the op otherwise."""
    suffix = "" if op == "softmax" else f"_{op}"
    return f"roofline{suffix}.png", f"frac_of_copy{suffix}.png"


def shape_plot_name(op: str, shape: Shape) -> str:
    """roofline_<MxN>.png (softmax) or roofline_<op>_<MxN>.png: one implementation dots per shape."""
    suffix = "" if op == "softmax" else f"_{op}"
    return f"roofline{suffix}_{shape_str(shape)}.png"


def write_plots(sweep: Sweep, out_dir: Path, shape: Shape | None = None) -> list[Path]:
    """Every figure of a sweep, written atomically into `out_dir`:

    - roofline.png: for softmax, the seed figure when any seed kernel ran (at `shape`, or
      `seed_shape`); otherwise (another op, or no seed kernel here) every implementation
      at every swept shape (or at `shape`) in one figure, so it is never a copy of a
      per-shape figure;
    - roofline[_op]_<MxN>.png: every implementation's dots at each swept shape;
    - frac_of_copy[_op].png.
    """
    import matplotlib.pyplot as plt

    from labtools.roofline_plot import plot_frac_of_copy, plot_roofline
    from labtools.roofline_seed import plot_seed_roofline

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    roof_name, frac_name = plot_names(sweep.op)
    seeded = sweep.op == "softmax" and (shape and seed_records(sweep, tuple(shape)) or seed_shape(sweep))
    if seeded:
        jobs = [(plot_seed_roofline, roof_name, {"shape": shape})]
    else:
        jobs = [(plot_roofline, roof_name, {"shape": shape, "every_shape": True})]
    shapes = list(dict.fromkeys(tuple(r.shape) for r in sweep.records))
    jobs += [(plot_roofline, shape_plot_name(sweep.op, sh), {"shape": sh}) for sh in shapes]
    jobs.append((plot_frac_of_copy, frac_name, {}))
    paths = []
    for fn, name, kw in jobs:
        fig = fn(sweep, path=out_dir / name, **kw)
        plt.close(fig)
        paths.append(out_dir / name)
    return paths


# The figures live in roofline_plot and roofline_seed (they import this module, so they are
# looked up on first use, not imported here); these names stay importable from here.
_FIGURES = {
    "colors_for": "labtools.roofline_plot",
    "plot_frac_of_copy": "labtools.roofline_plot",
    "plot_roofline": "labtools.roofline_plot",
    "save": "labtools.roofline_plot",
    "spread": "labtools.roofline_plot",
    "plot_seed_roofline": "labtools.roofline_seed",
}


def __getattr__(name: str):
    if name in _FIGURES:
        import importlib

        return getattr(importlib.import_module(_FIGURES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
