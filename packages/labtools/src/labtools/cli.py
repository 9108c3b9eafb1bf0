"""`lab`: the one command line of kernel-lab.

Each subcommand lives in its own module, which defines `configure(parser)` and
`main(args) -> int`; this file only lists them. Command modules import their heavy
dependencies (torch, matplotlib) inside `main`, so building the parser stays cheap and a
missing optional dependency breaks only the command that needs it.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
import sys

from labtools import __version__

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "env": ("labtools.commands.env", "report this machine: versions, CUDA devices, which backends run here"),
    "bench": (
        "labtools.commands.bench",
        "time every registered implementation of an op over the shape sweep",
    ),
    "roofline": ("labtools.commands.roofline", "plot a sweep: roofline and fraction of copy bandwidth"),
    "ncu": (
        "labtools.commands.ncu",
        "profile under Nsight Compute (or read its CSV); name each kernel's bottleneck",
    ),
    "run": (
        "labtools.commands.run",
        "the whole job: checks, ceilings, sweeps, plots, manifest.json, REPORT.md",
    ),
    "inductor": (
        "labtools.commands.inductor",
        "dump, annotate and time what torch.compile generates; experiment 25",
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lab", description="kernel-lab: softmax from naive to speed-of-light."
    )
    parser.add_argument("--version", action="version", version=f"lab (kernel-lab-labtools) {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        p.set_defaults(_module=module)
        importlib.import_module(module).configure(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.command_line = shlex.join(["lab", *argv])  # recorded in every file a command writes
    return int(importlib.import_module(args._module).main(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
