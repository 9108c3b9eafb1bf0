"""`lab run`: experiment 24's whole job, on whatever machine this is, into one folder.

1. the registered correctness checks (`labtools.registry.checks()`; CUDA-only ones are
   skipped, with the reason, without a GPU);
2. the ceilings: device copy and fp32 matmul, measured here;
3. the softmax and softmax_backward sweeps (every registered implementation; the full
   shape sweep on a GPU, a few small shapes and CPU implementations only without one)
   and their plots (roofline and fraction of copy bandwidth, per op);
4. B512, shape (512, 600) in float32, for the manifest, and the autotune picks;
5. with `ncu`, an Nsight Compute profile of every CUDA softmax implementation;
6. manifest.json (validated) and REPORT.md (written by run_report.py).

Whatever could not run here is listed, with the reason, in the manifest's notes and in
the report. The exit status is 1 when a check failed or an implementation crashed or
was wrong, 0 otherwise; the files are written either way.

The stages run in the order above, each a short function; they share the run folder and the
manifest they fill.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from labtools import ceilings as ceilings_mod
from labtools import manifest, ncu, peers, registry, roofline, run_report
from labtools.atomic import atomic_write_text
from labtools.env import collect
from labtools.progress import Progress
from labtools.sweep import (
    B512,
    DTYPES,
    Sweep,
    SweepConfig,
    default_device,
    default_shapes,
    plan,
    run_sweep,
    select,
    shape_str,
)

EXPERIMENTS = {"24": "24-triton-and-pytorch"}
OPS = ("softmax", "softmax_backward")


@dataclass
class RunConfig:
    out: Path = Path("out")
    experiment: str = EXPERIMENTS["24"]
    device: str = "auto"  # "auto": cuda when there is one
    quick: bool = False  # fewer shapes
    seed: int = 42
    time_cap_s: float | None = None  # per (impl, shape, dtype); default 1 s on CUDA, 0.3 s on CPU
    checks: bool = True
    ncu: bool = False
    ncu_shape: tuple[int, int] = roofline.PREFERRED_SHAPE
    command: str = "lab run"


def experiment_dir(key: str, start: Path | None = None) -> Path:
    """experiments/<name> of the repository around `start` (the working directory)."""
    name = EXPERIMENTS.get(key, key)
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "experiments").is_dir() and (d / "packages").is_dir():
            return d / "experiments" / name
    return here / "experiments" / name


def run_checks(checks: list[registry.Check], has_cuda: bool, log: TextIO) -> dict[str, dict]:
    out = {}
    for chk in checks:
        if chk.needs_cuda and not has_cuda:
            out[chk.name] = {"status": "skipped", "reason": "needs a CUDA device; there is none here"}
            continue
        print(f"lab run: check {chk.name}", file=log, flush=True)
        t0 = time.perf_counter()
        try:
            result = manifest.jsonable(chk.fn())
            if not isinstance(result, dict) or not isinstance(result.get("passed"), bool):
                why = f"returned {result!r:.200} (a dict with a bool 'passed' expected)"
                entry = {"status": "error", "reason": why}
            else:
                entry = {"status": "passed" if result["passed"] else "failed", "result": result}
        except Exception as exc:  # noqa: BLE001 - a crashing check is reported, the job goes on
            entry = {"status": "error", "reason": f"{type(exc).__name__}: {exc}"}
        entry["seconds"] = round(time.perf_counter() - t0, 3)
        out[chk.name] = entry
    return out


def autotune_picks(impls: list[registry.Implementation]) -> dict[str, list[dict] | str]:
    """meta["autotune_picks"]() of every implementation that has one (see labtools.registry)."""
    out: dict[str, list[dict] | str] = {}
    for impl in impls:
        fn = impl.meta.get("autotune_picks")
        if fn is None:
            continue
        try:
            out[impl.name] = manifest.jsonable(list(fn()))
        except Exception as exc:  # noqa: BLE001
            out[impl.name] = f"autotune_picks() raised {type(exc).__name__}: {exc}"
    return out


def _sweep_progress(config: SweepConfig, log: TextIO) -> Progress:
    todo, _ = plan(config, select(config))
    return Progress(len(todo), log, title=f"{config.op} on {config.device}")


def b512_from(sweep: Sweep) -> Sweep | None:
    """The B512 point (512x600 float32) as a sweep of its own, cut from `sweep` when it
    was swept there (records, skips and failures at that point); None otherwise."""
    records = sweep.at(B512, "float32")
    if not records:
        return None

    def here(entries: list[dict]) -> list[dict]:
        return [e for e in entries if tuple(e["shape"]) == B512 and e["dtype"] == "float32"]

    config = {**sweep.config, "shapes": [list(B512)], "dtypes": ["float32"], "cut_from_sweep": True}
    return Sweep(
        sweep.op,
        sweep.device,
        records,
        here(sweep.skipped),
        here(sweep.failed),
        sweep.ceilings,
        sweep.environment,
        config,
        sweep.command,
        sweep.date,
    )


def profile_with_ncu(
    impls: list[registry.Implementation], shape, out: Path, notes: list[str], log: TextIO
) -> dict:
    summaries = {}
    for impl in impls:
        if not impl.accepts(shape, "float32"):
            continue
        print(f"lab run: ncu {impl.name} {shape_str(shape)} float32", file=log, flush=True)
        try:
            kernels, _ = ncu.profile(
                ncu.launch_target(impl.name, shape_str(shape), "float32"),
                out / "ncu" / impl.name,
                ncu.NcuConfig(profile_from_start=False),
            )
            summaries[impl.name] = [k.summary() for k in kernels]
        except Exception as exc:  # noqa: BLE001 - no ncu, no permission: say so and go on
            notes.append(f"ncu of {impl.name} failed: {type(exc).__name__}: {exc}")
    return summaries


def run(cfg: RunConfig, log: TextIO | None = None) -> int:
    """Long because it lists the job's stages in the order they run, each a call."""
    log = log or sys.stderr
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    env = collect()
    env_dict = env.to_dict()
    device = default_device() if cfg.device == "auto" else cfg.device
    has_cuda = device == "cuda"
    cap = cfg.time_cap_s or (1.0 if has_cuda else 0.3)
    notes: list[str] = []
    if not has_cuda:
        gpu_impls = [i.name for op in OPS for i in registry.implementations(op, device="cuda")]
        notes.append(
            "no CUDA device: only CPU implementations ran, at the small CPU shapes "
            f"({', '.join(shape_str(s) for s in default_shapes('cpu', cfg.quick))}), against the host's "
            "NumPy copy and matmul ceilings; CPU caches are not flushed, so shapes that fit in them "
            "can beat the copy ceiling"
        )
        if gpu_impls:
            notes.append(f"not run (need a CUDA device): {', '.join(gpu_impls)}")
        if cfg.ncu:
            notes.append("ncu not run: needs a CUDA device")

    stages = ["checks", "ceilings", *(f"{op} sweep" for op in OPS), "B512"]
    stages += ["ncu"] * (cfg.ncu and has_cuda) + ["manifest and report"]
    job = Progress(len(stages), log, title="lab run", interval_s=0.0, plain=True)

    missing = [f"{label} {state}" for label, state in peers.status().items() if state.startswith("not")]
    if missing:
        notes.append("peers " + "; ".join(missing))

    # 1. checks
    job.step("correctness checks")
    checks = run_checks(registry.checks(), has_cuda, log) if cfg.checks else {}
    if not cfg.checks:
        notes.append("checks not run (--no-checks)")
    notes += [
        f"check {name} skipped: {c['reason']}" for name, c in checks.items() if c["status"] == "skipped"
    ]

    # 2. ceilings
    job.step(f"measuring the {device} copy and matmul ceilings")
    ceilings = ceilings_mod.measure(device, matmul=True)

    # 3. sweeps and their plots
    sweeps: dict[str, Sweep] = {}
    files: dict[str, str] = {}
    plots: list[Path] = []
    for op in OPS:
        job.step(f"{op} sweep on {device}")
        config = SweepConfig(
            op, device, default_shapes(device, cfg.quick), DTYPES, seed=cfg.seed, time_cap_s=cap
        )
        sweeps[op] = s = run_sweep(
            config,
            ceilings=ceilings,
            environment=env_dict,
            command=cfg.command,
            progress=_sweep_progress(config, log),
        )
        files[op] = s.save(out / f"sweep_{op}.json").name
        if s.records:
            plots += roofline.write_plots(s, out)
        else:
            notes.append(f"no {op} implementation ran on {device}: no plots for it")

    # 4. B512 (the sweep's own records when it has the point: one figure, measured once)
    job.step(f"B512 ({shape_str(B512)} float32)")
    b512 = b512_from(sweeps["softmax"])
    if b512 is None:
        b512_config = SweepConfig("softmax", device, (B512,), ("float32",), seed=cfg.seed, time_cap_s=cap)
        b512 = run_sweep(
            b512_config,
            ceilings=ceilings,
            environment=env_dict,
            command=cfg.command,
            progress=_sweep_progress(b512_config, log),
        )
        broken_b512 = b512.failed
    else:
        broken_b512 = []  # already counted with the sweep
    files["softmax@B512"] = b512.save(out / "b512_softmax.json").name
    picks = autotune_picks(registry.implementations("softmax", device=device))

    # 5. ncu
    ncu_summaries = {}
    if cfg.ncu and has_cuda:
        job.step("Nsight Compute profiles")
        cuda_impls = registry.implementations("softmax", device="cuda")
        ncu_summaries = profile_with_ncu(cuda_impls, cfg.ncu_shape, out, notes, log)
        atomic_write_text(out / "ncu_summary.json", json.dumps(ncu_summaries, indent=1) + "\n")

    # 6. manifest and report
    seed_roofline = roofline.seed_summary(sweeps["softmax"]) if sweeps["softmax"].records else None
    if seed_roofline is None:
        notes.append("seed roofline (naive, smem, fused, Triton): none of the four kernels ran here")
    job.step("manifest.json and REPORT.md")
    doc = manifest.build(
        experiment=cfg.experiment,
        seed=cfg.seed,
        device=device,
        environment=env_dict,
        b512=b512.records,
        autotune=picks,
        checks=checks,
        ceilings=ceilings,
        sweeps=files,
        command=cfg.command,
        notes=notes,
        roofline=seed_roofline,
    )
    manifest.write(doc, out / "manifest.json")
    report = run_report.render_report(doc, sweeps, b512, plots, ncu_summaries)
    atomic_write_text(out / "REPORT.md", report)

    job.close()
    failed = [n for n, c in checks.items() if c["status"] in ("failed", "error")]
    broken = [f for s in sweeps.values() for f in s.failed] + broken_b512
    print(
        f"lab run: wrote {out}/manifest.json, REPORT.md, {len(plots)} plots, {len(files)} sweep files",
        file=log,
    )
    if failed or broken:
        print(
            f"lab run: {len(failed)} check(s) failed, {len(broken)} implementation run(s) failed: see REPORT.md",
            file=log,
        )
        return 1
    return 0
