"""lab run: the end-to-end job -- checks, ceilings, sweeps, plots, manifest, REPORT."""

from __future__ import annotations

from pathlib import Path


def configure(parser) -> None:
    from labtools.job import EXPERIMENTS

    parser.add_argument(
        "--out", type=Path, help="output folder (default: out/, or the experiment's folder with --experiment)"
    )
    parser.add_argument(
        "--experiment",
        choices=sorted(EXPERIMENTS),
        help=f"write into experiments/<name>/ of this repository (24: {EXPERIMENTS['24']})",
    )
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    parser.add_argument("--quick", action="store_true", help="three shapes instead of the full sweep")
    parser.add_argument("--time-cap", type=float, help="seconds of timing per point at most")
    parser.add_argument("--no-checks", action="store_true", help="skip the registered correctness checks")
    parser.add_argument(
        "--ncu", action="store_true", help="also profile each CUDA softmax under Nsight Compute"
    )
    parser.add_argument("--seed", type=int, default=42)


def main(args) -> int:
    from labtools.job import EXPERIMENTS, RunConfig, experiment_dir, run

    out = args.out or (experiment_dir(args.experiment) if args.experiment else Path("out"))
    cfg = RunConfig(
        out=out,
        experiment=EXPERIMENTS[args.experiment or "24"],
        device=args.device,
        quick=args.quick,
        seed=args.seed,
        time_cap_s=args.time_cap,
        checks=not args.no_checks,
        ncu=args.ncu,
        command=args.command_line,
    )
    return run(cfg)
