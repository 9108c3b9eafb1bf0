"""The roofline figures of a sweep (see labtools.roofline for the model they draw):

- `plot_seed_roofline` (roofline.png for softmax when a seed kernel ran): the lab text's
  figure, in labtools.roofline_seed;
- `plot_roofline` (roofline_<MxN>.png, one per swept shape; roofline.png, every shape in one
  figure, when no seed kernel ran): one labelled dot per implementation and dtype;
- `plot_frac_of_copy`: fraction of the measured copy bandwidth against row length N.

Every figure marks the points the report flags: an unstable figure (IQR above
labtools.bench.UNSTABLE_REL_IQR of the median) gets a red ring and "(unstable)" in its
label, and a point above the measured copy bandwidth (CPU caches are not flushed, so a
shape that fits in them can beat it) an orange square, each with a legend entry.

The model behind them lives in labtools.roofline.
"""

from __future__ import annotations

import math
from pathlib import Path

from labtools.atomic import atomic_path
from labtools.bench import UNSTABLE_REL_IQR, BenchRecord
from labtools.ops import get_op
from labtools.roofline import (
    MARKERS,
    REFERENCE_COLOR,
    attainable_tflops,
    device_name_of,
    dots,
    pick_shape,
    primary,
    ridge_intensity,
    roofs,
)
from labtools.sweep import Shape, Sweep, shape_str

UNSTABLE_COLOR = "tab:red"
ABOVE_COPY_COLOR = "tab:orange"


def unstable_label() -> str:
    return f"unstable (IQR above {UNSTABLE_REL_IQR:.0%} of the median; not headlined)"


def above_copy(r: BenchRecord) -> bool:
    return r.frac_of_copy is not None and r.frac_of_copy > 1.0


def mark_flagged(ax, points: list[tuple[float, float, BenchRecord]], size: float) -> None:
    """Ring the unstable points, square the ones above copy bandwidth (x, y, record), with a
    legend entry for each kind present."""
    for kind, pick, marker, color in (
        (unstable_label(), lambda r: r.unstable, "o", UNSTABLE_COLOR),
        ("above the measured copy bandwidth", above_copy, "s", ABOVE_COPY_COLOR),
    ):
        chosen = [(x, y) for x, y, r in points if pick(r)]
        if chosen:
            ax.scatter(
                [x for x, _ in chosen],
                [y for _, y in chosen],
                s=size,
                marker=marker,
                facecolor="none",
                edgecolor=color,
                linewidth=1.6,
                zorder=7,
                label=kind,
            )


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


def new_figure(*args, **kw):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kw)


def plot_roofline(
    sweep: Sweep, shape: Shape | None = None, path: Path | None = None, every_shape: bool = False
):
    """Log-log roofline with one labelled dot per implementation and dtype at `shape`
    (`pick_shape` by default), or at every swept shape with `every_shape` (and no `shape`),
    each label then naming its shape.
    Long because a matplotlib figure is one sequence of drawing calls on shared axes.
    """
    if every_shape and shape is None:
        records = list(sweep.records)
        if not records:
            raise ValueError("the sweep has no records to plot")
        where = "every swept shape"
    else:
        shape = tuple(shape) if shape else pick_shape(sweep)
        records = sweep.at(shape)
        if not records:
            raise ValueError(f"the sweep has no records at {shape_str(shape)}")
        where = f"shape {shape_str(shape)}"
    many = len({tuple(r.shape) for r in records}) > 1
    device = device_name_of(sweep)
    roof_list = roofs(sweep.ceilings, device)
    points = dots(records, roof_list)
    record_of = {id(d): r for d, r in zip(points, records)}
    ref_labels = {d.label for d in points if d.is_reference}
    colors = colors_for([r.label for r in sweep.records], ref_labels)

    fig, ax = new_figure(figsize=(10, 7), dpi=150)
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
            r = record_of[id(d)]
            pct = "" if d.frac_of_roof is None else f"  {d.frac_of_roof:.0%}"
            where_ = f" {shape_str(r.shape)}" if many else ""
            ax.annotate(
                f"{d.label}{where_}{pct}{'  (unstable)' if r.unstable else ''}",
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

    mark_flagged(ax, [(d.intensity, d.tflops, record_of[id(d)]) for d in points], 170)
    # legend: roofs, flagged points, then one grey marker per dtype
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
    ax.set_title(f"{sweep.op} roofline on {device}, {where}", fontsize=12)
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

    fig, axes = new_figure(
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
        flagged = [r for r in sweep.records if r.dtype == dtype]
        mark_flagged(ax, [(r.shape[-1], value(r), r) for r in flagged], 110)
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
        f"{sweep.op}: fraction of copy bandwidth vs row length on {device_name_of(sweep)}", fontsize=12
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
