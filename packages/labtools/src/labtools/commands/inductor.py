"""lab inductor: dump, read and time what torch.compile generates; experiment 25.

    lab inductor dump TARGET --device cpu|cuda --out DIR [--mode MODE]
    lab inductor profile TARGET --device cpu|cuda [--modes default,max-autotune] [--json]
    lab inductor experiment --out DIR --device cpu|cuda|all [--modes default,max-autotune]
    lab inductor report --out DIR

TARGET is `tinyhead`, `minigpt` or `package.module:function`, a function taking `device`
and returning (fn_or_module, example_inputs) (see labtools.inductor.targets).
"""

from __future__ import annotations

import json
import shlex
import sys


def configure(parser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser(
        "dump", help="compile TARGET and write its kernels, their parse and an annotation to DIR"
    )
    p.add_argument("target", help="tinyhead | minigpt | package.module:function")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--out", required=True, help="folder to write (created)")
    p.add_argument("--mode", default="default", help="torch.compile mode (default, max-autotune, ...)")
    p = sub.add_parser("profile", help="time TARGET eager vs compiled, per compile mode")
    p.add_argument("target")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--modes", default="default,max-autotune", help="comma-separated torch.compile modes")
    p.add_argument("--json", action="store_true", help="print the records as JSON")
    p = sub.add_parser(
        "experiment", help="run experiment 25 on one device (or both) and regenerate its report"
    )
    p.add_argument("--out", required=True, help="the experiment folder, e.g. experiments/25-compile")
    p.add_argument("--device", choices=("cpu", "cuda", "all"), default="cpu")
    p.add_argument("--modes", default="default,max-autotune", help="compile modes to profile")
    p = sub.add_parser("report", help="regenerate experiment 25's documents from the runs recorded in --out")
    p.add_argument("--out", required=True)


def main(args) -> int:
    try:
        return {"dump": _dump, "profile": _profile, "experiment": _experiment, "report": _report}[
            args.action
        ](args)
    except ValueError as exc:
        print(f"lab inductor {args.action}: {exc}", file=sys.stderr)
        return 2


def _dump(args) -> int:
    from labtools.inductor import capture, targets
    from labtools.inductor.annotation import is_softmax

    fn, inputs = targets.resolve(args.target, args.device)
    d = capture.dump(fn, *inputs, mode=args.mode)
    d.write(args.out)
    kernels = [k for g in d.graphs() for k in g.kernels]
    print(
        f"{args.target} on {args.device} (mode {args.mode}): {len(d.modules)} graph(s), {len(kernels)} kernel(s), "
        f"max |compiled - eager| = {d.max_abs_error:.3g}; written to {args.out}"
    )
    for k in kernels:
        print(f"  {k.name:<60} {k.kind:<22} {'softmax' if is_softmax(k) else ''}")
    return 0


def _profile(args) -> int:
    from labtools.inductor import profile, targets

    fn, inputs = targets.resolve(args.target, args.device)
    records = profile(fn, *inputs, target=args.target, modes=[m for m in args.modes.split(",") if m])
    if args.json:
        print(json.dumps([r.to_dict() for r in records], indent=1))
        return 0
    print(
        f"{'mode':<16}{'compile (s)':>12}{'eager (us)':>12}{'compiled (us)':>15}{'eager/compiled':>16}{'max err':>10}"
    )
    for r in records:
        print(
            f"{r.mode:<16}{r.compile_s:>12.1f}{r.eager.median_us:>12.1f}{r.compiled.median_us:>15.1f}"
            f"{r.speedup:>16.2f}{r.max_abs_error:>10.2g}"
        )
    return 0


def _experiment(args) -> int:
    from labtools.inductor import experiment, report

    command = (
        "lab " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        if sys.argv[1:2] == ["inductor"]
        else f"lab inductor experiment --out {args.out} --device {args.device}"
    )
    for device in ("cpu", "cuda") if args.device == "all" else (args.device,):
        experiment.run(args.out, device, command, modes=[m for m in args.modes.split(",") if m])
    for path in report.write(args.out):
        print(path)
    return 0


def _report(args) -> int:
    from labtools.inductor import report

    for path in report.write(args.out):
        print(path)
    return 0
