"""The lab text's roofline figure (roofline.png of a softmax sweep where a seed kernel ran):
naive, smem, fused and Triton as dots at one fp32 shape, torch.compile beside them, F.softmax
as the reference line, under the measured and datasheet roofs (see labtools.roofline)."""

from __future__ import annotations

import math
from pathlib import Path

from labtools.ops import get_op
from labtools.roofline import (
    COMPILE_DOT,
    REFERENCE_COLOR,
    SEED_DOTS,
    SEED_DTYPE,
    attainable_tflops,
    device_name_of,
    dots,
    primary,
    reference_record,
    ridge_intensity,
    roofs,
    seed_records,
    seed_shape,
)
from labtools.roofline_plot import colors_for, mark_flagged, new_figure, save, spread
from labtools.sweep import Shape, Sweep, shape_str


def plot_seed_roofline(sweep: Sweep, shape: Shape | None = None, path: Path | None = None):
    """The lab text's roofline: naive, smem, fused and Triton as dots at one fp32 shape
    where all four ran, torch.compile as a dot, F.softmax as the reference line, under the
    measured (solid) and datasheet (dashed) roofs.
    Long because a matplotlib figure is one sequence of drawing calls on shared axes.
    """
    shape = tuple(shape) if shape else seed_shape(sweep)
    if shape is None:
        raise ValueError("no seed kernel (naive, smem, fused, Triton) in the sweep")
    recs = seed_records(sweep, shape)
    ref = reference_record(sweep, shape)
    device = device_name_of(sweep)
    roof_list = roofs(sweep.ceilings, device)
    bw, peak = primary(roof_list, "bandwidth"), primary(roof_list, "compute")
    points = {name: d for name, d in zip(recs, dots(list(recs.values()), roof_list))}
    ref_dot = dots([ref], roof_list)[0] if ref else None

    fig, ax = new_figure(figsize=(10, 7), dpi=150)
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
    mark_flagged(ax, [(points[n].intensity, points[n].tflops, recs[n]) for n in names], 200)
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
