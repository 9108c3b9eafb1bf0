"""lab run: the end-to-end job -- checks, ceilings, sweeps, plots, manifest, REPORT.

It writes into a run folder of its own (see labtools.runs): a new
out/run-<time>-<id>/ by default, or the new or empty folder named by --out, locked for
the run.

--experiment 24 regenerates the committed results of the card it runs on,
experiments/24-*/<card>/ (card_slug: h100, h200, cpu), and touches no other card's folder.
Two models can share a slug (an H100 PCIe and an H100 SXM are both h100): a card folder's
results are replaced only on the same device (same CUDA GPU model, or both CPU), or with
--overwrite. The job writes into a hidden folder beside the card's and the outputs are
swapped in only when it has finished: an interrupted or failed run leaves the committed
files as they were, and the folder never mixes two runs' outputs. Files of the folder that
lab run does not write (a README) are left alone.
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import shutil
import signal
from pathlib import Path

from labtools import cli
from labtools.atomic import atomic_write_text
from labtools.cli import UsageError

# What a lab run writes into its folder; in an experiment folder these are replaced as a whole.
RUN_OUTPUTS = (
    "manifest.json",
    "REPORT.md",
    "run.json",
    "ncu_summary.json",
    "sweep_*.json",
    "b512_*.json",
    "roofline*.png",
    "frac_of_copy*.png",
    "ncu",
)


def configure(parser) -> None:
    from labtools.job import EXPERIMENTS

    parser.add_argument(
        "--out",
        type=Path,
        help="output folder, locked while the job runs (default: a new out/run-<time>-<id>/, "
        "or the card's folder of the experiment with --experiment)",
    )
    parser.add_argument(
        "--experiment",
        choices=sorted(EXPERIMENTS),
        help=f"write into experiments/<name>/<card>/ of this repository, <card> the device it runs on "
        f"(h100, h200, cpu; 24: {EXPERIMENTS['24']})",
    )
    parser.add_argument(
        "--device",
        choices=["auto", "cuda", "cpu"],
        default="auto",
        help="where to run (default auto: cuda when there is one, else cpu with the CPU implementations)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="with --experiment: replace the card folder's committed results even when they were made "
        "on another model of the same slug (e.g. an H100 PCIe run over an H100 SXM one)",
    )
    parser.add_argument("--quick", action="store_true", help="three shapes instead of the full sweep")
    parser.add_argument(
        "--time-cap", type=cli.positive_float, help="seconds of timing per point at most, > 0"
    )
    parser.add_argument("--no-checks", action="store_true", help="skip the registered correctness checks")
    parser.add_argument(
        "--ncu", action="store_true", help="also profile each CUDA softmax under Nsight Compute"
    )
    parser.add_argument(
        "--seed",
        type=cli.seed,
        default=42,
        help="seed of every random input (sweeps, B512), 0 <= seed < 2**32 (default %(default)s)",
    )


def device_model(device: str) -> str:
    """What a result's device is, for comparing runs: the CUDA GPU's name, or "cpu"."""
    if device != "cuda":
        return "cpu"
    import torch

    return torch.cuda.get_device_name(0)


def card_slug(model: str) -> str:
    """The folder name of a device model: its first word that starts with capitals then digits,
    lowercased ("NVIDIA H100 80GB HBM3" -> "h100", "NVIDIA A100-SXM4-80GB" -> "a100"), else the
    whole name lowercased with every run of other characters made one "-" ("cpu" -> "cpu",
    "NVIDIA GeForce RTX 4090" -> "nvidia-geforce-rtx-4090")."""
    for word in model.split():
        m = re.match(r"[A-Z]+[0-9]+", word)
        if m:
            return m.group().lower()
    return re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-") or "unknown"


def committed_device(folder: Path) -> str | None:
    """The device of the results committed in `folder` (its manifest.json), None when there are none."""
    path = folder / "manifest.json"
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text())
        return (doc.get("gpu") or {}).get("model") or str(doc.get("device") or "cpu")
    except (OSError, ValueError, AttributeError):
        return "an unreadable manifest.json"


def check_experiment(folder: Path, device: str, overwrite: bool) -> None:
    made_on, here = committed_device(folder), device_model(device)
    if made_on is not None and made_on != here and not overwrite:
        raise UsageError(
            f"argument --experiment: {folder} holds results made on {made_on}, this run would be on "
            f"{here}: add --overwrite to replace them, or use --out DIR to write elsewhere"
        )


def install_outputs(staging: Path, target: Path) -> None:
    """Replace the lab run outputs in `target` by those in `staging`; other files stay.
    Ctrl-C is held off meanwhile, so the folder is never left half old, half new."""
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        target.mkdir(parents=True, exist_ok=True)
        for pattern in RUN_OUTPUTS:
            for p in target.glob(pattern):
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p)
                else:
                    p.unlink()
        for p in staging.iterdir():
            if p.name != ".lab.lock":
                p.replace(target / p.name)
        shutil.rmtree(staging)
        record = target / "run.json"
        if record.is_file():  # it named the staging folder the run was written in
            doc = json.loads(record.read_text())
            atomic_write_text(record, json.dumps({**doc, "folder": target.name}, indent=1) + "\n")
    finally:
        signal.signal(signal.SIGINT, old)


def main(args) -> int:
    from labtools import runs
    from labtools.commands.bench import resolve_device
    from labtools.job import experiment_dir

    device = resolve_device(args.device)
    if args.overwrite and not args.experiment:
        raise UsageError(
            "argument --overwrite: only with --experiment (--out must name a new or empty folder)"
        )
    if args.out or not args.experiment:
        with runs.open_run("run", args.out, command_line=args.command_line) as folder:
            return _run(args, device, folder)
    target = experiment_dir(args.experiment) / card_slug(device_model(device))
    check_experiment(target, device, args.overwrite)
    staging = target.parent / f".{target.name}.partial-{secrets.token_hex(3)}"
    try:
        staging.mkdir(parents=True)
        with runs.open_run("run", staging, command_line=args.command_line, option="--experiment") as folder:
            status = _run(args, device, folder)
        install_outputs(staging, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(staging)  # a run that did not finish leaves the committed results as they were
    print(f"lab run: results installed in {target}")
    return status


def _run(args, device: str, folder) -> int:
    from labtools.job import EXPERIMENTS, RunConfig, run

    cfg = RunConfig(
        out=folder.path,
        experiment=EXPERIMENTS[args.experiment or "24"],
        device=device,
        quick=args.quick,
        seed=args.seed,
        time_cap_s=args.time_cap,
        checks=not args.no_checks,
        ncu=args.ncu,
        command=args.command_line,
    )
    status = run(cfg)
    folder.finish(device=device, status="ok" if status == 0 else "failed", exit_status=status)
    return status
