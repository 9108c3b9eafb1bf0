"""`lab`: the one command line of kernel-lab.

Each subcommand lives in its own module, which defines `configure(parser)` and
`main(args) -> int`; this file only lists them. Command modules import their heavy
dependencies (torch, matplotlib) inside `main`, so building the parser stays cheap and a
missing optional dependency breaks only the command that needs it.

A user's mistake (a bad argument, a missing or unreadable input, an output folder that
cannot be written) is one line on stderr naming the argument and what is allowed, and
exit status 2, before any long work starts. Commands raise :class:`UsageError` for
those; argparse's own errors take the same form. ``--debug`` (or ``LAB_DEBUG=1``) shows
the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import shlex
import sys
from pathlib import Path

from labtools import __version__

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "env": ("labtools.commands.env", "report this machine: versions, CUDA devices, which backends run here"),
    "bench": (
        "labtools.commands.bench",
        "time every registered implementation of an op over the shape sweep",
    ),
    "compare": (
        "labtools.commands.compare",
        "two sweeps side by side (before / after), or implementations against one in a sweep",
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
    "runs": ("labtools.commands.runs", "list the runs under out/: command, device, date, status"),
}

USAGE_ERROR = 2  # exit status of every user mistake, argparse's included


class UsageError(Exception):
    """A user's mistake: printed as one line (`lab CMD: message`), exit status 2."""


class LabParser(argparse.ArgumentParser):
    """argparse with one-line errors: `lab bench: argument --shapes: ...` and exit 2
    (argparse prints the whole usage block first; the line names what is wrong already)."""

    def error(self, message: str):  # type: ignore[override]
        print(f"{self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(USAGE_ERROR)


# --- argument types: each raises ArgumentTypeError, which argparse words as ------------
# --- "argument --NAME: <message>" -------------------------------------------------------


def positive_float(text: str) -> float:
    """A finite number > 0 (seconds, rates)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def nonnegative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def positive_int(text: str) -> int:
    value = nonnegative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be >= 1, got 0")
    return value


def seed(text: str) -> int:
    """A random seed: 0 <= seed < 2**32 (what NumPy and torch both accept)."""
    value = nonnegative_int(text)
    if value >= 2**32:
        raise argparse.ArgumentTypeError(f"must be below 2**32, got {value}")
    return value


MAX_ELEMENTS = 2**31  # one tensor of M*N elements; past this int32 indexing in the kernels overflows


def shapes(text: str) -> tuple[tuple[int, int], ...]:
    """ "4096x600,512x600" -> ((4096, 600), (512, 600)); both sizes >= 1, M*N < 2**31."""
    out = []
    for part in text.split(","):
        fields = part.strip().lower().split("x")
        try:
            m, n = (int(v) for v in fields)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"bad shape {part.strip()!r}: expected MxN with whole numbers, e.g. 4096x600"
            ) from None
        if m < 1 or n < 1:
            raise argparse.ArgumentTypeError(f"bad shape {part.strip()!r}: both sizes must be >= 1")
        if m * n >= MAX_ELEMENTS:
            raise argparse.ArgumentTypeError(
                f"bad shape {part.strip()!r}: {m * n:,} elements; at most {MAX_ELEMENTS - 1:,}"
            )
        out.append((m, n))
    return tuple(out)


def one_shape(text: str) -> tuple[int, int]:
    got = shapes(text)
    if len(got) != 1:
        raise argparse.ArgumentTypeError(f"expected one MxN shape, got {len(got)}")
    return got[0]


DTYPES = ("float32", "float16", "bfloat16", "float64")


def choices(text: str, allowed: tuple[str, ...], what: str, one: bool = False) -> tuple[str, ...]:
    """Comma-separated values, each one of `allowed` (one: exactly one); else argparse's type error,
    which names `what` (a plural noun) and what is allowed."""
    got = tuple(v.strip() for v in text.split(",") if v.strip())
    bad = [v for v in got if v not in allowed]
    if bad or not got:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(bad) or '(none given)'}; allowed: {', '.join(allowed)}"
        )
    if one and len(got) != 1:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(allowed)}, got {text!r}")
    return got


def dtypes(text: str) -> tuple[str, ...]:
    """Comma-separated storage dtypes, each one of DTYPES."""
    return choices(text, DTYPES, "dtype(s)")


def dtype(text: str) -> str:
    return choices(text, DTYPES, "dtype(s)", one=True)[0]


def input_file(text: str) -> Path:
    """An existing, readable, regular file."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{text}: not a regular file")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text}: not readable")
    return path


def names(text: str) -> tuple[str, ...]:
    got = tuple(n.strip() for n in text.split(",") if n.strip())
    if not got:
        raise argparse.ArgumentTypeError("expected a comma-separated list of names, got nothing")
    return got


# --- the command line ----------------------------------------------------------------------


def _add_debug(parser: argparse.ArgumentParser, default) -> None:
    parser.add_argument(
        "--debug",
        action="store_true",
        default=default,
        help="show the Python traceback of an error (also: LAB_DEBUG=1)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = LabParser(prog="lab", description="kernel-lab: softmax from naive to speed-of-light.")
    parser.add_argument("--version", action="version", version=f"lab (kernel-lab-labtools) {__version__}")
    _add_debug(parser, False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        p.set_defaults(_module=module)
        _add_debug(p, argparse.SUPPRESS)  # `lab bench --debug` as well as `lab --debug bench`
        importlib.import_module(module).configure(p)
    return parser


def debug_wanted(argv: list[str]) -> bool:
    return os.environ.get("LAB_DEBUG", "") not in ("", "0") or "--debug" in argv


def quiet_environment() -> None:
    """Settings whose absence only makes a library warn, set to the value it uses anyway
    (a user's own setting wins): Triton 3.9 warns on every kernel it compiles while
    TRITON_DEFAULT_FP_FUSION is unset, and "1" is its default; Inductor's C++ path on a
    machine without a CUDA runtime logs the CUDA_HOME it guessed, which no CPU run uses."""
    import logging

    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    logging.getLogger("torch.utils.cpp_extension").addFilter(_not_the_cuda_home_guess)


def _not_the_cuda_home_guess(record) -> bool:
    return not str(record.msg).startswith("No CUDA runtime is found, using CUDA_HOME")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    quiet_environment()
    args = build_parser().parse_args(argv)  # exits 2 with one line on a bad argument
    args.command_line = shlex.join(["lab", *argv])  # recorded in every file a command writes
    debug = args.debug or debug_wanted([])
    from labtools.runs import OutputError, interrupted

    try:
        return int(importlib.import_module(args._module).main(args) or 0)
    except (UsageError, OutputError) as exc:
        if debug:
            raise
        print(f"lab {args.command}: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except BaseException as exc:
        if debug or not interrupted(exc):
            raise
        print(f"lab {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    # Through labtools.cli, not this __main__ module: command modules import UsageError
    # from labtools.cli, and `except UsageError` must name that same class.
    from labtools.cli import main as _main

    sys.exit(_main())
