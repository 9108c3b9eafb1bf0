"""The offline command: compile every specialization the kernel modules can launch, print the
table of their resources (registers, shared memory, stack, spills), with no GPU needed.

    python -m kernels_cuda.codegen --offline --arch sm_80 sm_90
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from kernels_cuda import codegen
from kernels_cuda.codegen import Compiled, CompileError


class _Progress:
    """A line on stderr every `every` seconds at most (and at the end): count, elapsed, ETA.
    Plain lines, so that a log that is not a terminal shows it too."""

    def __init__(self, total: int, label: str, every: float = 2.0, stream=None):
        self.total, self.label, self.every = total, label, every
        self.stream = stream or sys.stderr
        self.t0 = self.last = time.perf_counter()
        self.done = 0

    def update(self, done: int, force: bool = False) -> None:
        self.done = done
        now = time.perf_counter()
        if not force and now - self.last < self.every:
            return
        self.last = now
        elapsed = now - self.t0
        eta = f"{elapsed / done * (self.total - done):.0f} s" if done else "?"
        print(
            f"{self.label}: {done}/{self.total}, {elapsed:.0f} s elapsed, ETA {eta}",
            file=self.stream,
            flush=True,
        )


def compile_all(archs, specs=None, jobs: int | None = None, progress: float | None = None) -> list[Compiled]:
    """Compile every (spec, arch) pair the spec supports; NVRTC releases the GIL, so threads help.
    With `progress` (seconds), a progress line goes to stderr at least that often."""
    pairs = [
        (s, a) for a in archs for s in (codegen.all_specs() if specs is None else specs) if s.supports_arch(a)
    ]
    with ThreadPoolExecutor(jobs or os.cpu_count() or 1) as pool:
        futures = [pool.submit(codegen.compile_spec, *p) for p in pairs]
        if progress is not None:
            bar = _Progress(len(futures), "compiling specializations", every=progress)
            pending = set(futures)
            while pending:
                _, pending = wait(pending, timeout=progress, return_when=FIRST_COMPLETED)
                bar.update(len(futures) - len(pending), force=not pending)
        return [f.result() for f in futures]


def format_table(results: list[Compiled]) -> str:
    rows = [("specialization", "arch", "regs", "smem B", "stack B", "spill st B", "spill ld B", "nvrtc s")]
    for r in results:
        res = r.resources
        numbers = (
            ("?",) * 5
            if res is None
            else (
                res.registers,
                res.shared_bytes,
                res.stack_bytes,
                res.spill_store_bytes,
                res.spill_load_bytes,
            )
        )
        rows.append(
            (r.spec.name, r.arch, *map(str, numbers), "cached" if r.from_cache else f"{r.seconds:.2f}")
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernels_cuda.codegen", description=codegen.__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--offline",
        action="store_true",
        help="compile for --arch without touching a GPU (default: the current device's arch)",
    )
    parser.add_argument("--arch", nargs="+", default=None, help="real architectures, e.g. sm_80 sm_90")
    parser.add_argument("--jobs", type=int, default=None, help="parallel NVRTC compiles (default: CPU count)")
    parser.add_argument(
        "--progress-every",
        type=float,
        default=2.0,
        help="seconds between progress lines on stderr (default: 2)",
    )
    args = parser.parse_args(argv)
    if args.arch is None:
        if args.offline:
            parser.error("--offline needs --arch (e.g. --arch sm_80 sm_90)")
        args.arch = [codegen.device_arch(0)]
    for arch in args.arch:
        try:
            codegen.arch_cc(arch)
        except ValueError as exc:
            parser.error(f"--arch: {exc}")
    if args.jobs is not None and args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    if not args.progress_every > 0:
        parser.error(f"--progress-every must be a positive number of seconds, got {args.progress_every}")
    t0 = time.perf_counter()
    try:
        results = compile_all(args.arch, jobs=args.jobs, progress=args.progress_every)
    except CompileError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(format_table(results))
    spilled = [r for r in results if r.resources and r.resources.spill_bytes]
    print(
        f"\n{len(results)} specializations for {' '.join(args.arch)} with NVRTC %d.%d in "
        f"{time.perf_counter() - t0:.1f} s; {len(spilled)} spill; cache: {codegen.cache_dir()}"
        % codegen.nvrtc_version()
    )
    return 0
