"""Experiment 25's documents, regenerated from the recorded runs.

`write(out)` reads `out/cpu/results.json` and `out/cuda/results.json` (whichever exist)
and the dumps next to them, and writes REPORT.md, KERNEL_ANNOTATION.md, manifest.json and
the saved kernel the lab asks for by name: kernel.cpp (the CPU TinyHead softmax) and kernel.py
(the CUDA one), each a copy of the source in its dump's kernels/ folder, which the documents
link. Every number comes from
a results file; every walkthrough from parsing the captured output code again. Files
it does not generate (DISTRIBUTED.md) are listed in the manifest as hand-written.

Each section of REPORT.md is a function, in the order the report reads: here, but for the
timing sections (4 and 5), which are in `report_timing`. The sections share the run
records' keys and nothing else.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from labtools.atomic import atomic_write_text
from labtools.inductor.annotation import annotate, is_softmax
from labtools.inductor.capture import read_dump_dir
from labtools.inductor.report_timing import timing_sections

DEVICES = ("cpu", "cuda")
SAVED_KERNEL = {"cpu": "kernel.cpp", "cuda": "kernel.py"}  # the names the compile lab asks for
GENERATED = ("REPORT.md", "KERNEL_ANNOTATION.md", "manifest.json", *SAVED_KERNEL.values())
TOLERANCE = 1e-6


def load_runs(out: Path) -> dict[str, dict]:
    return {
        d: json.loads((out / d / "results.json").read_text())
        for d in DEVICES
        if (out / d / "results.json").exists()
    }


def _softmax(out: Path, device: str, target: str):
    """(kernel, graph) of a recorded dump's softmax kernel, one with a mask fused in first
    (the attention's, not the LM head's), or None."""
    folder = out / device / target
    if not folder.is_dir():
        return None
    found = [(k, g) for g in read_dump_dir(folder) for k in g.kernels if is_softmax(k)]
    found.sort(key=lambda kg: "where" not in kg[0].fused_ops)
    return found[0] if found else None


def kernel_path(device: str, target: str, kernel) -> str:
    """Where the dump keeps `kernel`'s source, relative to the experiment folder (the one
    copy the documents link to)."""
    return f"{device}/{target}/kernels/{kernel.name}.{'py' if kernel.language == 'triton' else 'cpp'}"


def _rerun(device: str) -> str:
    where = "on a GPU machine" if device == "cuda" else "on a CPU machine"
    return f"not recorded yet: run `lab inductor experiment --out <this folder> --device {device}` {where}"


def _provenance(runs: dict) -> list[str]:
    md = [
        "| run | date (UTC) | machine | torch | triton | conditions | command |",
        "|---|---|---|---|---|---|---|",
    ]
    notes = []
    for d in DEVICES:
        r = runs.get(d)
        if r is None:
            md.append(f"| {d} | {_rerun(d)} | | | | | |")
            continue
        m = r["machine"]
        where = m.get("gpu") or f"{m['processor']}, {m['cpus']} CPUs"
        env = " ".join(f"{k}={v}" for k, v in m["env"].items())
        md.append(
            f"| {d} | {r['date']} | {where} ({m['platform']}) | {r['versions']['torch']} | "
            f"{r['versions']['triton']} | torch threads: {m['torch_threads']}, load average "
            f"{m['load_average']:.1f}{', ' + env if env else ''} | `{r['command']}` |"
        )
        if m["load_average"] > m["cpus"]:
            notes.append(
                f"The {d} run shared its machine with other work (load average {m['load_average']:.1f} "
                f"on {m['cpus']} CPUs): its timings carry that noise."
            )
    return md + ([""] + notes if notes else [])


def _match(runs: dict) -> list[str]:
    md = [
        "| device | model | input | max abs(compiled - eager) | max abs(compiled - float64 NumPy) | below 1e-6 |",
        "|---|---|---|---|---|---|",
    ]
    for d, r in runs.items():
        t = r["tinyhead"]
        ok = t["max_abs_error"] < TOLERANCE
        md.append(
            f"| {d} | TinyHead | {tuple(t['shape'])} | {t['max_abs_error']:.3g} | "
            f"{t['max_abs_error_vs_float64']:.3g} | {'yes' if ok else '**no**'} |"
        )
        g = r["minigpt"]
        if g["available"]:
            md.append(
                f"| {d} | MiniGPT | example_inputs() | {g['max_abs_error']:.3g} | | "
                f"{'yes' if g['max_abs_error'] < TOLERANCE else '**no**'} |"
            )
    return md


def _kernels(out: Path, runs: dict) -> list[str]:
    md = []
    for d in DEVICES:
        found = _softmax(out, d, "tinyhead") if d in runs else None
        if not found:
            md.append(f"- {d.upper()}: the TinyHead softmax kernel {_rerun(d)}.")
            continue
        name = runs[d]["tinyhead"]["softmax_kernel"]
        path = kernel_path(d, "tinyhead", found[0])
        kernels = ", ".join(f"`{k}`" for k in runs[d]["tinyhead"]["kernels"])
        saved = SAVED_KERNEL[d]
        md.append(
            f"- {d.upper()}: [{saved}]({saved}) (a copy of [{path}]({path})) is `{name}`, the whole softmax in one "
            f"generated kernel (the graph's generated kernels: {kernels}; the linear layer stays a library "
            f"call). The module Inductor wrote: [{d}/tinyhead/output_code_0.py]({d}/tinyhead/output_code_0.py); "
            f"its parse: [{d}/tinyhead/parse.json]({d}/tinyhead/parse.json)."
        )
    md.append("- The walkthrough, generated from the parse: [KERNEL_ANNOTATION.md](KERNEL_ANNOTATION.md).")
    return md


def _minigpt(runs: dict) -> list[str]:
    md = []
    for d, r in runs.items():
        g = r["minigpt"]
        if not g["available"]:
            md.append(f"- {d.upper()}: not compiled: {g['error']}")
            continue
        md.append(
            f"- {d.upper()}: {len(g['kernels'])} generated kernels ([{d}/minigpt/ANNOTATION.md]"
            f"({d}/minigpt/ANNOTATION.md)). Softmax kernels:"
        )
        for s in g["softmax_kernels"]:
            extra = (
                f"; fused in with it: {', '.join(s['also_fused'])} (the mask and scale)"
                if s["also_fused"]
                else ""
            )
            src = f" from {', '.join(s['source_nodes'])}" if s["source_nodes"] else ""
            md.append(
                f"  - `{s['kernel']}` ({s['kind']}{src}, launched {s['launches']} times): "
                f"{', '.join(s['fused_ops'])}{extra}"
            )
        if not g["softmax_kernels"]:
            md.append("  - none: no generated kernel fuses max, sub, exp, sum and div")
        calls = sorted({c["callee"] for c in g["attention_calls"]})
        md.append(f"  - library calls around attention: {', '.join(f'`{c}`' for c in calls) or 'none'}")
    return md


def _exports(runs: dict) -> list[str]:
    md = []
    for d, r in runs.items():
        for target in ("tinyhead", "minigpt"):
            rec = r.get(target, {})
            if target == "minigpt" and not rec.get("available"):
                continue
            path = f"{d}/{target}/exported_program.txt"
            md.append(
                f"- {d.upper()} {target}: "
                + (
                    f"could not export: {rec['export_error']}"
                    if rec.get("export_error")
                    else f"[{path}]({path})"
                )
            )
    return md


def report(out: Path, runs: dict) -> str:
    eager, modes = timing_sections(runs)
    md = [
        "# Experiment 25: torch.compile on the grammar MiniGPT and its TinyHead stand-in",
        "",
        "Generated by `lab inductor report` from the recorded runs below; numbers are never typed in by hand. "
        "`lab inductor experiment --out experiments/25-compile --device cpu|cuda` records one device's run under "
        "`cpu/` or `cuda/` and regenerates this file from every run present.",
        "",
        "TinyHead is the lab's stand-in: `Linear(64, 600)` then `softmax(dim=-1)`, seed 42. Every compile is "
        "`torch.compile(..., dynamic=False)` under `torch.no_grad()` in a fresh Inductor cache; timings come "
        "from `labtools.bench` (median of warm calls at the same shapes). Compile times are the first call in a "
        "fresh cache, in a process that has already compiled once (imports and one-time setup are not in them).",
        "",
        *_provenance(runs),
        "",
        "## 1. Compile match",
        "",
        *_match(runs),
        "",
        "## 2. The kernel and its annotation",
        "",
        *_kernels(out, runs),
        "",
        "## 3. The full MiniGPT: where attention's softmax went",
        "",
        *(_minigpt(runs) or ["No run recorded."]),
        "",
        "## 4. Eager vs compiled",
        "",
        *eager,
        '## 5. mode="default" vs mode="max-autotune"',
        "",
        *modes,
        "## 6. The FX graph, exported",
        "",
        "`torch.export.export(model, inputs)`, printed (graph, signature, range constraints):",
        "",
        *(_exports(runs) or ["No run recorded."]),
        "",
        "## 7. Distributed training",
        "",
        "[DISTRIBUTED.md](DISTRIBUTED.md): DDP, FSDP, tensor and pipeline parallelism, and which one the grammar "
        "MiniGPT would use.",
    ]
    return "\n".join(md) + "\n"


def annotation(out: Path, runs: dict) -> str:
    md = [
        "# Reading Inductor's softmax kernels",
        "",
        "Generated by `lab inductor report` from the recorded dumps: each section is `labtools.inductor.annotate` "
        "run on the parse of the captured output code. Line numbers refer to the kernel's own file.",
        "",
    ]
    for d in DEVICES:
        found = _softmax(out, d, "tinyhead") if d in runs else None
        title = (
            f"[{kernel_path(d, 'tinyhead', found[0])}]({kernel_path(d, 'tinyhead', found[0])})"
            if found
            else ""
        )
        md.append(f"# {d.upper()}: TinyHead's softmax" + (f", {title}" if title else ""))
        md += ["", annotate(*found) if found else f"{_rerun(d)}.", ""]
        gpt = _softmax(out, d, "minigpt") if d in runs else None
        if gpt:
            path = kernel_path(d, "minigpt", gpt[0])
            md += [
                f"# {d.upper()}: the MiniGPT's attention softmax, [{path}]({path})",
                "",
                annotate(*gpt),
                "",
            ]
    return "\n".join(md)


def write(out: str | Path) -> list[Path]:
    """Regenerate the experiment's documents from the runs recorded under `out`."""
    out = Path(out)
    runs = load_runs(out)
    if not runs:
        raise ValueError(
            f"no recorded run under {out} (expected {out}/cpu/results.json or {out}/cuda/results.json)"
        )
    written = []
    for d in DEVICES:
        found = _softmax(out, d, "tinyhead") if d in runs else None
        if found:
            written.append(out / SAVED_KERNEL[d])
            atomic_write_text(written[-1], found[0].source)
    for name, text in (("REPORT.md", report(out, runs)), ("KERNEL_ANNOTATION.md", annotation(out, runs))):
        written.append(out / name)
        atomic_write_text(written[-1], text)
    written.append(out / "manifest.json")
    atomic_write_text(written[-1], json.dumps(manifest(out, runs), indent=1) + "\n")
    return written


def manifest(out: Path, runs: dict) -> dict:
    files = {}
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out).as_posix()
        if (
            not p.is_file() or rel == "manifest.json" or rel.startswith(".")
        ):  # .cuda-partial: a run in progress
            continue
        top = rel.split("/", 1)[0]
        made_by = (
            f"{top} run" if top in DEVICES else "lab inductor report" if rel in GENERATED else "hand-written"
        )
        files[rel] = {
            "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
            "bytes": p.stat().st_size,
            "made_by": made_by,
        }
    return {
        "experiment": "25-compile",
        "generator": "lab inductor experiment / lab inductor report",
        "runs": {d: {k: r[k] for k in ("date", "command", "versions", "machine")} for d, r in runs.items()},
        "files": files,
    }
