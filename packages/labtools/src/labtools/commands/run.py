"""lab run: the end-to-end job -- checks, ceilings, sweeps, plots, manifest, REPORT.

It writes into a run folder of its own (see labtools.runs): a new
out/run-<time>-<id>/ by default, or the folder named by --out or --experiment, which is
locked for the run.
"""

from __future__ import annotations

from pathlib import Path

from labtools import cli


def configure(parser) -> None:
    from labtools.job import EXPERIMENTS

    parser.add_argument(
        "--out",
        type=Path,
        help="output folder, locked while the job runs (default: a new out/run-<time>-<id>/, "
        "or the experiment's folder with --experiment)",
    )
    parser.add_argument(
        "--experiment",
        choices=sorted(EXPERIMENTS),
        help=f"write into experiments/<name>/ of this repository (24: {EXPERIMENTS['24']})",
    )
    parser.add_argument(
        "--device",
        choices=["auto", "cuda", "cpu"],
        default="auto",
        help="where to run (default auto: cuda when there is one, else cpu with the CPU implementations)",
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


def main(args) -> int:
    from labtools import runs
    from labtools.commands.bench import resolve_device
    from labtools.job import EXPERIMENTS, RunConfig, experiment_dir, run

    device = resolve_device(args.device)
    out = args.out or (experiment_dir(args.experiment) if args.experiment else None)
    option = "--out" if args.out or not args.experiment else "--experiment"
    with runs.open_run("run", out, command_line=args.command_line, option=option) as folder:
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
