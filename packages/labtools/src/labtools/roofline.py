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
  implementation and dtype at that shape.
- `plot_frac_of_copy`: fraction of the measured copy bandwidth against row length N, one
  panel per dtype, one line per implementation.

Every figure is written atomically (`labtools.atomic`).

Over 400 lines because the seed's figure and the per-shape figures share the roofs, the cost
model and the labelling; each drawing function is short.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from labtools.atomic import atomic_path
from labtools.bench import BenchRecord
from labtools.ceilings import Ceilings, datasheet_for
from labtools.ops import get_op
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


def spread(ys: list[float], min_gap: float, lo: float, hi: float) -> list[float]:
    """Label positions as close to `ys` as possible, in the same order, at least `min_gap`
    apart and inside [lo, hi] (as far as they fit)."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    pos = [ys[i] for i in order]
    for k in range(1, len(pos)):  # push up
        pos[k] = max(pos[k], pos[k - 1] + min_gap)
    if pos and pos[-1] > hi:  # then down from the top
        pos[-1] = hi
        for k in range(len(pos) - 2, -1, -1):
            pos[k] = min(pos[k], pos[k + 1] - min_gap)
    pos = [max(p, lo + k * min_gap) for k, p in enumerate(pos)]
    out = [0.0] * len(ys)
    for k, i in enumerate(order):
        out[i] = pos[k]
    return out


def colors_for(labels: list[str], reference_labels: set[str]) -> dict[str, str]:
    """One color per implementation label, the same in every figure of a sweep."""
    import matplotlib

    cycle = [c for c in matplotlib.colormaps["tab10"].colors]
    out, k = {}, 0
    for label in labels:
        if label in out:
            continue
        if label in reference_labels:
            out[label] = REFERENCE_COLOR
        else:
            out[label] = cycle[k % len(cycle)]
            k += 1
    return out


def _device_name(sweep: Sweep) -> str:
    devices = sweep.environment.get("devices") or []
    if sweep.device == "cuda" and devices:
        return devices[0]["name"]
    return sweep.ceilings.device if sweep.ceilings else sweep.device


def _figure(*args, **kw):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kw)


def plot_roofline(sweep: Sweep, shape: Shape | None = None, path: Path | None = None):
    """Log-log roofline with one labelled dot per implementation and dtype at `shape`.
    Long because a matplotlib figure is one sequence of drawing calls on shared axes.
    """
    shape = tuple(shape) if shape else pick_shape(sweep)
    records = sweep.at(shape)
    if not records:
        raise ValueError(f"the sweep has no records at {shape_str(shape)}")
    device = _device_name(sweep)
    roof_list = roofs(sweep.ceilings, device)
    points = dots(records, roof_list)
    ref_labels = {d.label for d in points if d.is_reference}
    colors = colors_for([r.label for r in sweep.records], ref_labels)

    fig, ax = _figure(figsize=(10, 7), dpi=150)
    fig.subplots_adjust(left=0.09, right=0.97, top=0.9, bottom=0.17)
    ax.set_xscale("log")
    ax.set_yscale("log")

    intensities = sorted({d.intensity for d in points})
    bw, peak = primary(roof_list, "bandwidth"), primary(roof_list, "compute")
    x_hi = max(intensities) * 12
    if bw and peak:
        x_hi = max(x_hi, 6 * ridge_intensity(bw.value, peak.value))
    x_lo = min(intensities) / 12
    y_vals = [d.tflops for d in points] + [r.value for r in roof_list if r.kind == "compute"]
    y_lo = min(d.tflops for d in points) / 8
    y_hi = max(y_vals) * 2.5
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)

    # roofs: solid = measured, dashed = datasheet
    xs = [x_lo * (x_hi / x_lo) ** (k / 200) for k in range(201)]
    peaks = [r for r in roof_list if r.kind == "compute"]
    for r in roof_list:
        style = "-" if r.source == "measured" else "--"
        if r.kind == "bandwidth":
            cap = next((p.value for p in peaks if p.source == r.source), peak.value if peak else None)
            ys = [attainable_tflops(x, r.value, cap) for x in xs]
            ax.plot(xs, ys, style, color="tab:blue", lw=2 if r.source == "measured" else 1.2, label=r.label)
        else:
            ax.axhline(
                r.value, ls=style, color="tab:red", lw=2 if r.source == "measured" else 1.2, label=r.label
            )

    # dots, then their labels in columns beside each intensity (left of the first, right of the rest)
    for d in points:  # the reference as a ring on top, so it shows through the dots it sits among
        marker = MARKERS.get(d.dtype, "o")
        if d.is_reference:
            ax.scatter(
                [d.intensity],
                [d.tflops],
                s=130,
                marker=marker,
                facecolor="none",
                edgecolor=REFERENCE_COLOR,
                linewidth=1.8,
                zorder=5,
            )
        else:
            ax.scatter(
                [d.intensity],
                [d.tflops],
                s=55,
                marker=marker,
                color=colors[d.label],
                edgecolor="white",
                linewidth=0.8,
                zorder=4,
            )
    axes_height_in = ax.get_position().height * fig.get_figheight()
    decades = math.log10(y_hi / y_lo)
    gap = 1.35 * 8.5 / 72 / axes_height_in * decades  # one 8.5-pt line, in decades
    x_decades = math.log10(x_hi / x_lo)
    for k, xi in enumerate(intensities):
        group = [d for d in points if d.intensity == xi]
        left = k == 0 and len(intensities) > 1
        ys = spread(
            [math.log10(d.tflops) for d in group], gap, math.log10(y_lo) + gap, math.log10(y_hi) - gap
        )
        x_text = xi * 10 ** ((-1 if left else 1) * 0.07 * x_decades)
        for d, y in zip(group, ys):
            pct = "" if d.frac_of_roof is None else f"  {d.frac_of_roof:.0%}"
            ax.annotate(
                f"{d.label}{pct}",
                xy=(d.intensity, d.tflops),
                xytext=(x_text, 10**y),
                fontsize=8.5,
                ha="right" if left else "left",
                va="center",
                color=colors[d.label],
                zorder=6,
                bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85},
                arrowprops={"arrowstyle": "-", "color": "0.6", "lw": 0.6, "shrinkA": 0, "shrinkB": 4},
            )

    # legend: roofs, then one grey marker per dtype
    for dtype in _in_order({d.dtype for d in points}):
        x = next(d.intensity for d in points if d.dtype == dtype)
        ax.scatter(
            [], [], marker=MARKERS.get(dtype, "o"), color="0.45", label=f"{dtype} (x = {x:.3g} FLOP/B)"
        )
    ax.legend(loc="lower right", fontsize=8.5, framealpha=0.95)
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", alpha=0.08)
    ax.set_xlabel("arithmetic intensity (FLOP / byte of compulsory traffic)")
    ax.set_ylabel("achieved TFLOP/s")
    op = get_op(sweep.op)
    ax.set_title(f"{sweep.op} roofline on {device}, shape {shape_str(shape)}", fontsize=12)
    fig.text(0.01, 0.075, f"Cost model ({sweep.op}): {op.cost_note}.", fontsize=8)
    fig.text(
        0.01,
        0.052,
        "Percent beside each dot: achieved / attainable at its intensity under the first bandwidth "
        "and compute roofs of the legend.",
        fontsize=8,
    )
    fig.text(
        0.01,
        0.029,
        "Solid roofs: measured in this sweep; dashed: datasheet. Ring: the reference implementation.",
        fontsize=8,
    )
    fig.text(
        0.01, 0.006, f"Sweep of {sweep.date}: {sweep.command or 'labtools.sweep'}", fontsize=7, color="0.4"
    )
    if path is not None:
        save(fig, path)
    return fig


def _in_order(dtypes: set[str]) -> list[str]:
    """fp32 before bf16 (MARKERS' order), anything else after."""
    return sorted(dtypes, key=lambda d: (list(MARKERS).index(d) if d in MARKERS else len(MARKERS), d))


def _n_tick(n: int) -> str:
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def plot_frac_of_copy(sweep: Sweep, path: Path | None = None):
    """Fraction of the measured copy bandwidth against row length N: one panel per dtype,
    one line per implementation through its largest-M shape at each N (hollow markers:
    the other M at that N).
    Long because a matplotlib figure is one sequence of drawing calls on shared axes.
    """
    if not sweep.records:
        raise ValueError("the sweep has no records to plot")
    measured = all(r.frac_of_copy is not None for r in sweep.records)
    value = (lambda r: r.frac_of_copy) if measured else (lambda r: r.gbps)
    dtypes = _in_order({r.dtype for r in sweep.records})
    ref_labels = {r.label for r in sweep.records if r.ref == r.impl}
    labels = list(dict.fromkeys(r.label for r in sweep.records))
    colors = colors_for(labels, ref_labels)

    fig, axes = _figure(
        1, len(dtypes), figsize=(6.2 * len(dtypes) + 2.2, 5.2), dpi=150, sharey=True, squeeze=False
    )
    axes = axes[0]
    right = 1 - 1.9 / fig.get_figwidth()  # room for the legend
    fig.subplots_adjust(left=0.07, right=right, top=0.86, bottom=0.17, wspace=0.08)
    n_values = sorted({r.shape[-1] for r in sweep.records})
    y_max = max(value(r) for r in sweep.records)
    for ax, dtype in zip(axes, dtypes):
        for label in labels:
            recs = [r for r in sweep.records if r.dtype == dtype and r.label == label]
            if not recs:
                continue
            best: dict[int, BenchRecord] = {}
            for r in recs:  # the line goes through the largest M at each N
                if r.shape[-1] not in best or r.shape[0] > best[r.shape[-1]].shape[0]:
                    best[r.shape[-1]] = r
            line = sorted(best.values(), key=lambda r: r.shape[-1])
            ax.plot(
                [r.shape[-1] for r in line],
                [value(r) for r in line],
                "-",
                marker=MARKERS.get(dtype, "o"),
                color=colors[label],
                lw=2.2 if label in ref_labels else 1.5,
                ms=5,
                label=label,
            )
            others = [r for r in recs if best[r.shape[-1]] is not r]
            if others:
                ax.scatter(
                    [r.shape[-1] for r in others],
                    [value(r) for r in others],
                    marker=MARKERS.get(dtype, "o"),
                    facecolor="none",
                    edgecolor=colors[label],
                    s=30,
                )
        if measured:
            ax.axhline(1.0, color="0.3", ls="--", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(n_values)
        ax.set_xticklabels([_n_tick(n) for n in n_values], rotation=0 if len(n_values) < 8 else 45)
        ax.minorticks_off()
        ax.set_title(dtype, fontsize=11)
        ax.set_xlabel("row length N (elements)")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel(
        "fraction of measured copy bandwidth" if measured else "GB/s (no copy ceiling measured)"
    )
    axes[0].set_ylim(0, max(1.1, 1.08 * y_max) if measured else 1.08 * y_max)
    handles, names = axes[0].get_legend_handles_labels()
    for ax in axes[1:]:
        for h, n in zip(*ax.get_legend_handles_labels()):
            if n not in names:
                handles.append(h)
                names.append(n)
    fig.legend(
        handles,
        names,
        loc="center left",
        bbox_to_anchor=(right + 0.01, 0.5),
        fontsize=9,
        title="implementation",
        frameon=False,
    )
    copy = f"measured copy {sweep.ceilings.copy_gbps:,.0f} GB/s = 1.0" if measured and sweep.ceilings else ""
    fig.suptitle(
        f"{sweep.op}: fraction of copy bandwidth vs row length on {_device_name(sweep)}", fontsize=12
    )
    fig.text(0.07, 0.045, f"Cost model: {get_op(sweep.op).cost_note}. {copy}.", fontsize=7.5)
    fig.text(
        0.07, 0.015, "Lines: the largest M at each N; hollow markers: smaller M at the same N.", fontsize=7.5
    )
    if path is not None:
        save(fig, path)
    return fig


def save(fig, path: Path) -> Path:
    """Write `fig` as a PNG, atomically (a reader never sees half a file)."""
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    return path


# --- the lab text's figure -----------------------------------------------------------


def _seed_records(sweep: Sweep, shape: Shape) -> dict[str, BenchRecord]:
    """seed name -> record at `shape` in fp32, for the seed dots and torch.compile present."""
    by_impl = {r.impl: r for r in sweep.at(shape, SEED_DTYPE)}
    return {name: by_impl[impl] for name, impl in (*SEED_DOTS, COMPILE_DOT) if impl in by_impl}


def seed_shape(sweep: Sweep, preferred: Shape = PREFERRED_SHAPE) -> Shape | None:
    """The shape of the seed figure: `preferred` when all four seed kernels ran there in
    fp32, else the largest such shape; failing that, the shape with the most seed dots
    (`preferred`, then the largest, wins ties); None when no seed kernel ran at all."""
    shapes = list(dict.fromkeys(tuple(r.shape) for r in sweep.records if r.dtype == SEED_DTYPE))
    count = {sh: sum(n in _seed_records(sweep, sh) for n, _ in SEED_DOTS) for sh in shapes}
    full = [sh for sh in shapes if count[sh] == len(SEED_DOTS)]
    if tuple(preferred) in full:
        return tuple(preferred)
    if full:
        return max(full, key=math.prod)
    some = [sh for sh in shapes if count[sh]]
    return max(some, key=lambda sh: (count[sh], sh == tuple(preferred), math.prod(sh))) if some else None


def _reference(sweep: Sweep, shape: Shape) -> BenchRecord | None:
    return next((r for r in sweep.at(shape, SEED_DTYPE) if r.ref == r.impl), None)


def seed_summary(sweep: Sweep, shape: Shape | None = None, file: str = "roofline.png") -> dict | None:
    """What the seed figure shows, for manifest.json: each dot with its implementation,
    shape and dtype, the reference line, and the seed kernels missing (and why)."""
    shape = tuple(shape) if shape else seed_shape(sweep)
    if shape is None:
        return None
    roof_list = roofs(sweep.ceilings, _device_name(sweep))
    recs = _seed_records(sweep, shape)
    ref = _reference(sweep, shape)

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


def plot_seed_roofline(sweep: Sweep, shape: Shape | None = None, path: Path | None = None):
    """The lab text's roofline: naive, smem, fused and Triton as dots at one fp32 shape
    where all four ran, torch.compile as a dot, F.softmax as the reference line, under the
    measured (solid) and datasheet (dashed) roofs.
    Long because a matplotlib figure is one sequence of drawing calls on shared axes.
    """
    shape = tuple(shape) if shape else seed_shape(sweep)
    if shape is None:
        raise ValueError("no seed kernel (naive, smem, fused, Triton) in the sweep")
    recs = _seed_records(sweep, shape)
    ref = _reference(sweep, shape)
    device = _device_name(sweep)
    roof_list = roofs(sweep.ceilings, device)
    bw, peak = primary(roof_list, "bandwidth"), primary(roof_list, "compute")
    points = {name: d for name, d in zip(recs, dots(list(recs.values()), roof_list))}
    ref_dot = dots([ref], roof_list)[0] if ref else None

    fig, ax = _figure(figsize=(10, 7), dpi=150)
    fig.subplots_adjust(left=0.09, right=0.97, top=0.9, bottom=0.15)
    ax.set_xscale("log")
    ax.set_yscale("log")
    x0 = next(iter(points.values())).intensity if points else ref_dot.intensity
    x_lo, x_hi = x0 / 12, x0 * 12
    if bw and peak:
        x_hi = max(x_hi, 6 * ridge_intensity(bw.value, peak.value))
    ys = [d.tflops for d in points.values()] + ([ref_dot.tflops] if ref_dot else [])
    ys += [r.value for r in roof_list if r.kind == "compute"]
    y_lo, y_hi = min(ys) / 8, max(ys) * 2.5
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    xs = [x_lo * (x_hi / x_lo) ** (k / 200) for k in range(201)]
    peaks = [r for r in roof_list if r.kind == "compute"]
    for r in roof_list:
        style, lw = ("-", 2.0) if r.source == "measured" else ("--", 1.2)
        if r.kind == "bandwidth":
            cap = next((p.value for p in peaks if p.source == r.source), peak.value if peak else None)
            ax.plot(
                xs,
                [attainable_tflops(x, r.value, cap) for x in xs],
                style,
                color="tab:blue",
                lw=lw,
                label=r.label,
            )
        else:
            ax.axhline(r.value, ls=style, color="tab:red", lw=lw, label=r.label)
    if ref_dot is not None:
        pct = "" if ref_dot.frac_of_roof is None else f", {ref_dot.frac_of_roof:.0%} of the roof"
        ax.axhline(
            ref_dot.tflops,
            color=REFERENCE_COLOR,
            lw=1.6,
            ls="-.",
            label=f"{ref.label} (reference): {ref_dot.tflops:.3g} TFLOP/s{pct}",
        )
    colors = colors_for(list(recs), set())
    names = list(points)
    gap = 1.35 * 9 / 72 / (ax.get_position().height * fig.get_figheight()) * math.log10(y_hi / y_lo)
    label_ys = spread(
        [math.log10(points[n].tflops) for n in names], gap, math.log10(y_lo) + gap, math.log10(y_hi) - gap
    )
    x_text = x0 * 10 ** (0.07 * math.log10(x_hi / x_lo))
    for name, y in zip(names, label_ys):
        d, r = points[name], recs[name]
        marker = "D" if name == COMPILE_DOT[0] else "o"
        ax.scatter(
            [d.intensity], [d.tflops], s=70, marker=marker, color=colors[name], edgecolor="white", zorder=5
        )
        pct = "" if d.frac_of_roof is None else f"  {d.frac_of_roof:.0%}"
        flag = "  (unstable)" if r.unstable else ""
        ax.annotate(
            (name if r.label.casefold() == name.casefold() else f"{name} ({r.label})") + pct + flag,
            xy=(d.intensity, d.tflops),
            xytext=(x_text, 10**y),
            fontsize=9,
            ha="left",
            va="center",
            color=colors[name],
            zorder=6,
            bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85},
            arrowprops={"arrowstyle": "-", "color": "0.6", "lw": 0.6, "shrinkA": 0, "shrinkB": 4},
        )
    ax.legend(loc="lower right", fontsize=8.5, framealpha=0.95)
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", alpha=0.08)
    ax.set_xlabel("arithmetic intensity (FLOP / byte of compulsory traffic)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title(f"softmax roofline on {device}: the four kernel versions at {shape_str(shape)} {SEED_DTYPE}")
    missing = [n for n, _ in SEED_DOTS if n not in recs]
    notes = [
        f"Cost model: {get_op(sweep.op).cost_note}. Percent: achieved / attainable under the first roofs."
    ]
    if missing:
        notes.append(f"Not at this shape: {', '.join(missing)}.")
    command = sweep.command or "labtools.sweep"
    notes.append(f"Sweep of {sweep.date}: {command if len(command) <= 150 else command[:147] + '...'}")
    for k, text in enumerate(notes):
        fig.text(0.01, 0.055 - 0.023 * k, text, fontsize=7.5)
    if path is not None:
        save(fig, path)
    return fig


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
      at `shape` or `pick_shape`;
    - roofline[_op]_<MxN>.png: every implementation's dots at each swept shape;
    - frac_of_copy[_op].png.
    """
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    roof_name, frac_name = plot_names(sweep.op)
    seeded = sweep.op == "softmax" and (shape and _seed_records(sweep, tuple(shape)) or seed_shape(sweep))
    jobs = [(plot_seed_roofline if seeded else plot_roofline, roof_name, {"shape": shape})]
    shapes = list(dict.fromkeys(tuple(r.shape) for r in sweep.records))
    jobs += [(plot_roofline, shape_plot_name(sweep.op, sh), {"shape": sh}) for sh in shapes]
    jobs.append((plot_frac_of_copy, frac_name, {}))
    paths = []
    for fn, name, kw in jobs:
        fig = fn(sweep, path=out_dir / name, **kw)
        plt.close(fig)
        paths.append(out_dir / name)
    return paths
