"""REPORT.md of a `lab run` (job.py): the run's manifest, sweeps and plots as one page, top to
bottom as the reader sees it, and its headline lines (unstable figures never headlined)."""

from __future__ import annotations

from pathlib import Path

from labtools.bench import UNSTABLE_REL_IQR, BenchRecord
from labtools.sweep import B512, Sweep, format_table, shape_str, summarize
from labtools.tables import render


def render_report(
    doc: dict, sweeps: dict[str, Sweep], b512: Sweep, plots: list[Path], ncu_summaries: dict
) -> str:
    """Long because it writes REPORT.md top to bottom, section by section, as the reader sees it."""
    v = doc["versions"]
    gpu = doc["gpu"]["model"]
    lines = [
        f"# lab run: experiment {doc['experiment']}",
        "",
        f"- date: {doc['date']}; command: `{doc['command']}`; seed {doc['seed']}",
        f"- device: {doc['device']}"
        + (
            f" ({gpu}, compute capability {doc['gpu']['compute_capability']})"
            if doc["gpu"]["model"]
            else f" ({doc['ceilings']['device']})"
        ),
        "- versions: " + ", ".join(f"{k} {v[k]}" for k in v),
        f"- produced by {doc['produced_by']}; everything below was measured by this run",
        "",
        "## Not run here",
        "",
        *([f"- {n}" for n in doc["notes"]] or ["- nothing: every registered check and implementation ran"]),
        "",
        "## Correctness checks",
        "",
    ]
    if doc["checks"]:
        lines += ["| check | status | seconds | detail |", "|---|---|---|---|"]
        for name, c in doc["checks"].items():
            result = c.get("result", {})
            detail = c.get("reason") or ", ".join(f"{k}={val}" for k, val in result.items() if k != "passed")
            lines.append(f"| {name} | {c['status']} | {c.get('seconds', '')} | {detail[:200]} |")
    else:
        lines.append("No checks registered or run.")
    c = doc["ceilings"]
    lines += [
        "",
        "## Ceilings (measured here)",
        "",
        f"- copy: {c['copy_gbps']:,.1f} GB/s (read + write) on {c['device']}",
    ]
    lines += [f"- {mode} matmul: {t:,.3g} TFLOP/s" for mode, t in c["matmul_tflops"].items()]
    if c["datasheet"]:
        d = c["datasheet"]
        lines.append(
            f"- datasheet ({d['name']}): HBM {d['hbm_gbps']:,} GB/s, fp32 {d['fp32_tflops']} TFLOP/s "
            f"({d['source']})"
        )
    lines += ["", "## Headline", "", *headline(b512.records, sweeps)]
    lines += [
        "",
        f"## softmax at B512 ({shape_str(B512)} float32)",
        "",
        "Device time: CUDA events, L2 flushed, median (on the CPU: the blocked wall time per call). "
        "Call time: wall time per call, back to back, synchronized at the end. "
        "vs F.softmax = t(F.softmax) / t(implementation), for each. "
        f"unstable: IQR above {UNSTABLE_REL_IQR:.0%} of the median.",
        "",
    ]
    b512_rows = [
        (
            name,
            k["label"],
            f"{k['us_at_B512']:.1f}",
            None if k.get("call_us_at_B512") is None else f"{k['call_us_at_B512']:.1f}",
            _x(k["frac_of_F_softmax"]),
            _x(k.get("call_frac_of_F_softmax")),
            k.get("threads"),
            f"unstable ({k['unstable_why']})" if k.get("unstable") else "",
            str(k.get("autotune_picked") or ""),
        )
        for name, k in doc["softmax_kernels"].items()
    ]
    headers = (
        "implementation",
        "label",
        "device us",
        "call us",
        "device vs F.softmax",
        "call vs F.softmax",
        "threads",
        "stability",
        "autotune pick",
    )
    lines.append(render(headers, b512_rows, style="markdown", align="llrrrrrll"))
    for op, s in sweeps.items():
        lines += [
            "",
            f"## {op} sweep ({s.device})",
            "",
            format_table(s, style="markdown") if s.records else "(no records)",
        ]
        for title, entries in (("Skipped", s.skipped), ("Failed", s.failed)):
            if entries:
                lines += ["", f"{title}:", ""] + [f"- {line}" for line in summarize(entries)]
    seed = doc.get("roofline")
    if seed:
        lines += [
            "",
            f"## The lab text's roofline ({seed['file']})",
            "",
            f"Shape {'x'.join(map(str, seed['shape']))} {seed['dtype']}: every dot and the reference line "
            "were measured there.",
            "",
        ]
        line_ref = seed.get("reference_line")
        dots = list(seed["dots"].items()) + ([(f"{line_ref['label']} (line)", line_ref)] if line_ref else [])
        seed_rows = [
            (
                name,
                d["impl"],
                f"{'x'.join(map(str, d['shape']))} {d['dtype']}",
                f"{d['tflops']:.3g}",
                None if d["frac_of_roof"] is None else f"{d['frac_of_roof']:.0%}",
                f"{d['median_us']:.1f}",
                None if d["call_us"] is None else f"{d['call_us']:.1f}",
            )
            for name, d in dots
        ]
        headers = ("dot", "implementation", "shape", "TFLOP/s", "of roof", "device us", "call us")
        lines.append(render(headers, seed_rows, style="markdown", align="lllrrrr"))
        lines += [f"- not on it: {name}: {why}" for name, why in seed["missing"].items()]
    if b512.failed:
        lines += ["", "B512 failures:", ""] + [f"- {line}" for line in summarize(b512.failed)]
    if ncu_summaries:
        lines += ["", "## Nsight Compute verdicts", ""]
        for impl, kernels in ncu_summaries.items():
            lines += [f"- {impl} / {k['kernel'][:60]}: {k['verdict']}" for k in kernels]
    lines += (
        ["", "## Files", ""]
        + [f"- [{p.name}]({p.name})" for p in plots]
        + [f"- [{f}]({f})" for f in doc["sweeps"].values()]
    )
    lines += ["- [manifest.json](manifest.json)", ""]
    return "\n".join(lines)


def _x(ratio: float | None) -> str:
    return "" if ratio is None else f"{ratio:.2f}x"


def headline(b512: list[BenchRecord], sweeps: dict[str, Sweep]) -> list[str]:
    """The report's headline lines: at B512, the fastest implementation other than the
    reference by device time and by call time, against the reference; then, per sweep,
    how many figures were unstable. Unstable figures are never headlined."""
    lines = []
    ref = next((r for r in b512 if r.ref == r.impl), None)
    stable = [r for r in b512 if not r.unstable and r is not ref]
    if ref is None:
        lines.append("- B512: no reference timed, no ratios")
    elif ref.unstable:
        lines.append(
            f"- B512: the reference ({ref.label}) is unstable ({ref.unstable_why}): no ratio headlined"
        )
    else:
        for what, key, ratio in (
            ("device time", "median_us", "vs_ref"),
            ("call time", "call_us", "call_vs_ref"),
        ):
            timed = [r for r in stable if getattr(r, key) is not None and getattr(r, ratio) is not None]
            if not timed:
                lines.append(f"- B512 {what}: no stable implementation besides {ref.label}")
                continue
            best = min(timed, key=lambda r: getattr(r, key))
            lines.append(
                f"- B512 {what}: fastest {best.label} ({best.impl}) {getattr(best, key):.1f} us, "
                f"{getattr(best, ratio):.2f}x {ref.label} ({getattr(ref, key):.1f} us)"
            )
    for op, s in sweeps.items():
        bad = [r for r in s.records if r.unstable]
        if bad:
            lines.append(
                f"- {op} sweep: {len(bad)} of {len(s.records)} figures unstable (IQR above "
                f"{UNSTABLE_REL_IQR:.0%} of the median), flagged in its table, not headlined"
            )
    return lines
