"""lab inductor: dump, read and time what torch.compile generates; experiment 25.

    lab inductor dump TARGET --device cpu|cuda --out DIR [--mode MODE]
    lab inductor profile TARGET --device cpu|cuda [--modes default,max-autotune] [--json]
    lab inductor experiment --out DIR --device cpu|cuda|all [--modes default,max-autotune]
    lab inductor report --out DIR

TARGET is `tinyhead`, `minigpt` or `package.module:function`, a function taking `device`
and returning (fn_or_module, example_inputs) (see labtools.inductor.targets).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from labtools.cli import UsageError, choices

# A first torch.compile in a process, on a 2-core machine: tens of seconds (the heartbeat's
# estimate only; nothing depends on it).
EXPECTED_COMPILE_S = 30.0


MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def modes(text: str) -> list[str]:
    return list(choices(text, MODES, "torch.compile mode(s)"))


def one_mode(text: str) -> str:
    return choices(text, MODES, "torch.compile mode(s)", one=True)[0]


def existing_folder(text: str) -> Path:
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: no such folder")
    return path


TARGET_HELP = "tinyhead | minigpt | package.module:function (a function of `device` returning (fn, inputs))"
DEVICE_HELP = "where to compile and run (default: %(default)s)"


def configure(parser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser(
        "dump", help="compile TARGET and write its kernels, their parse and an annotation to a run folder"
    )
    p.add_argument("target", help=TARGET_HELP)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help=DEVICE_HELP)
    p.add_argument(
        "--out",
        type=Path,
        help="folder to write, locked while writing (default: a new out/inductor-dump-<time>-<id>/)",
    )
    p.add_argument(
        "--mode", type=one_mode, default="default", help=f"torch.compile mode, one of {', '.join(MODES)}"
    )
    p = sub.add_parser("profile", help="time TARGET eager vs compiled, per compile mode")
    p.add_argument("target", help=TARGET_HELP)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help=DEVICE_HELP)
    p.add_argument(
        "--modes",
        type=modes,
        default="default,max-autotune",
        help=f"comma-separated torch.compile modes, of {', '.join(MODES)} (default: %(default)s)",
    )
    p.add_argument("--json", action="store_true", help="print the records as JSON")
    p = sub.add_parser(
        "experiment", help="run experiment 25 on one device (or both) and regenerate its report"
    )
    p.add_argument(
        "--out", type=Path, required=True, help="the experiment folder, e.g. experiments/25-compile (locked)"
    )
    p.add_argument("--device", choices=("cpu", "cuda", "all"), default="cpu", help=DEVICE_HELP)
    p.add_argument(
        "--modes",
        type=modes,
        default="default,max-autotune",
        help="comma-separated torch.compile modes to profile (default: %(default)s)",
    )
    p = sub.add_parser("report", help="regenerate experiment 25's documents from the runs recorded in --out")
    p.add_argument(
        "--out", type=existing_folder, required=True, help="the experiment folder holding cpu/ and/or cuda/"
    )


def heartbeat(what: str, **kw):
    # imported here: labtools.inductor imports torch, and building the parser must not
    from labtools.inductor.heartbeat import heartbeat as _heartbeat

    return _heartbeat(what, **kw)


def main(args) -> int:
    action = {"dump": _dump, "profile": _profile, "experiment": _experiment, "report": _report}[args.action]
    try:
        return action(args)
    except ValueError as exc:  # the inductor modules word a bad target or device as ValueError
        raise UsageError(str(exc)) from None


def _resolve(args):
    from labtools.inductor import targets

    with heartbeat(f"building {args.target} on {args.device}", every_s=5):
        return targets.resolve(args.target, args.device)


def _dump(args) -> int:
    from labtools import runs
    from labtools.inductor import capture
    from labtools.inductor.annotation import is_softmax
    from labtools.inductor.targets import check_device

    check_device(args.device)
    with runs.open_run("inductor dump", args.out, command_line=args.command_line) as run:
        fn, inputs = _resolve(args)
        with heartbeat(f"torch.compile {args.target} (mode {args.mode})", expected_s=EXPECTED_COMPILE_S):
            d = capture.dump(fn, *inputs, mode=args.mode)
        d.write(run.path)
        run.finish(device=args.device, target=args.target, mode=args.mode)
    kernels = [k for g in d.graphs() for k in g.kernels]
    print(
        f"{args.target} on {args.device} (mode {args.mode}): {len(d.modules)} graph(s), {len(kernels)} kernel(s), "
        f"max |compiled - eager| = {d.max_abs_error:.3g}; written to {run.path}"
    )
    for k in kernels:
        print(f"  {k.name:<60} {k.kind:<22} {'softmax' if is_softmax(k) else ''}")
    return 0


def _profile(args) -> int:
    from labtools.inductor import profile
    from labtools.tables import render

    fn, inputs = _resolve(args)
    with heartbeat(f"compiling and timing {args.target} in {len(args.modes)} mode(s)"):
        records = profile(fn, *inputs, target=args.target, modes=args.modes)
    if args.json:
        print(json.dumps([r.to_dict() for r in records], indent=1))
        return 0
    headers = ("mode", "compile (s)", "eager (us)", "compiled (us)", "eager/compiled", "max err")
    rows = [
        (
            r.mode,
            round(r.compile_s, 1),
            round(r.eager.median_us, 1),
            round(r.compiled.median_us, 1),
            round(r.speedup, 2),
            f"{r.max_abs_error:.2g}",
        )
        for r in records
    ]
    print(render(headers, rows, align="lrrrrr"))
    return 0


def _experiment(args) -> int:
    from labtools import runs
    from labtools.inductor import experiment, report
    from labtools.inductor.targets import check_device

    devices = ("cpu", "cuda") if args.device == "all" else (args.device,)
    for device in devices:
        check_device(device)
    with runs.open_run(
        "inductor experiment",
        args.out,
        command_line=args.command_line,
        fresh=False,  # adds a device's results
    ):
        for device in devices:
            experiment.run(args.out, device, args.command_line, modes=args.modes)
        for path in report.write(args.out):
            print(path)
    return 0


def _report(args) -> int:
    from labtools import runs
    from labtools.inductor import report

    with runs.open_run(
        "inductor report",
        args.out,
        command_line=args.command_line,
        fresh=False,  # rewrites from the data there
    ):
        for path in report.write(args.out):
            print(path)
    return 0
