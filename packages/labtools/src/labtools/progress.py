"""Progress of a long loop (a sweep's points, a job's steps), with elapsed time and ETA.

- On a terminal: a live bar, from rich when it is installed, else a one-line text bar
  redrawn in place; both show done/total, elapsed time, ETA and the step in hand.
- Anywhere else (a CI log, a file, a pipe): a plain line at most every `interval_s`
  seconds, always for the first step, and a closing line with the total time, so a log
  shows that the job is alive without a line per point.

The ETA is the mean time of the completed steps times the steps left: a step is complete
when the next one starts (`step`) or when the loop ends (`close`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO


def clock_str(seconds: float | None) -> str:
    """H:MM:SS (or M:SS under an hour); "?" when unknown."""
    if seconds is None:
        return "?"
    s = int(round(max(seconds, 0.0)))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """`step(what)` as each step starts, `close()` after the last (or use it as a context
    manager). `done` counts the steps started, `completed` those finished. `plain` writes
    lines even on a terminal (for an outer loop whose inner loops draw bars)."""

    def __init__(
        self,
        total: int,
        stream: TextIO | None = None,
        *,
        title: str = "",
        interval_s: float = 5.0,
        width: int = 28,
        clock: Callable[[], float] = time.monotonic,
        use_rich: bool | None = None,
        plain: bool = False,
    ):
        self.total, self.done, self.title, self.width = total, 0, title, width
        self.stream = stream or sys.stderr
        self.interval_s, self.clock = interval_s, clock
        self.tty = not plain and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.started = clock()
        self.current = ""
        self._last_line_at: float | None = None
        self._closed = False
        self._rich = self._start_rich() if self.tty and use_rich is not False else None

    # --- state ------------------------------------------------------------------------

    @property
    def completed(self) -> int:
        return self.total if self._closed else max(self.done - 1, 0)

    def elapsed_s(self) -> float:
        return self.clock() - self.started

    def eta_s(self) -> float | None:
        """Seconds left at the mean pace of the completed steps (None before the first)."""
        if self.completed == 0:
            return None
        return self.elapsed_s() / self.completed * max(self.total - self.completed, 0)

    def line(self) -> str:
        """The plain status line: "[3/18] 0:12 elapsed, ETA 1:05 -- what"."""
        head = f"{self.title}: " if self.title else ""
        k = f"{self.done:>{len(str(self.total))}}/{self.total}"
        what = f" -- {self.current}" if self.current else ""
        return f"{head}[{k}] {clock_str(self.elapsed_s())} elapsed, ETA {clock_str(self.eta_s())}{what}"

    # --- driving it ---------------------------------------------------------------------

    def step(self, what: str = "") -> None:
        """Step `what` starts now; the previous one is complete."""
        self.done += 1
        self.current = what
        if self._rich is not None:
            bar, task = self._rich
            bar.update(task, completed=self.completed, what=what)
        elif self.tty:
            filled = self.width * self.completed // max(self.total, 1)
            bar = "#" * filled + "." * (self.width - filled)
            print(f"\r[{bar}] {self.line()[:110]:<110}", end="", file=self.stream, flush=True)
        else:
            now = self.clock()
            if self._last_line_at is None or now - self._last_line_at >= self.interval_s:
                self._last_line_at = now
                print(self.line(), file=self.stream, flush=True)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        head = f"{self.title}: " if self.title else ""
        summary = f"{head}{self.done} of {self.total} steps in {clock_str(self.elapsed_s())}"
        if self._rich is not None:
            bar, task = self._rich
            bar.update(task, completed=self.total, what="done")
            bar.stop()
        elif self.tty:
            print(f"\r{summary:<140}", file=self.stream, flush=True)
        elif self.done:
            print(summary, file=self.stream, flush=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start_rich(self):
        try:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress
        except ImportError:
            return None
        bar = RichProgress(
            TextColumn(self.title or ""),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[what]}"),
            console=Console(file=self.stream),
            transient=False,
        )
        task = bar.add_task(self.title, total=self.total, what="")
        bar.start()
        return bar, task
