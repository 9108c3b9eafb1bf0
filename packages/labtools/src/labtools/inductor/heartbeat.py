"""Progress for steps that print nothing while they work (a torch.compile takes seconds to
minutes): a line when a step starts, a line every few seconds while it runs, with the
elapsed time and, when the step's usual length is known, an estimate of what is left,
and a line when it ends. Plain lines, so logs that are not a terminal (CI) show them too.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO


def _fmt(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


@contextlib.contextmanager
def heartbeat(
    what: str,
    *,
    every_s: float = 5.0,
    expected_s: float | None = None,
    prefix: str = "lab inductor",
    stream: TextIO | None = None,
) -> Iterator[None]:
    """Print `prefix: what ...` now, `... still running, N s` every `every_s` seconds,
    and `... done in N s` (or `failed after N s`) at the end."""
    stream = stream or sys.stderr
    t0 = time.monotonic()
    stop = threading.Event()

    def say(text: str) -> None:
        print(f"{prefix}: {what}: {text}", file=stream, flush=True)

    def beat() -> None:
        while not stop.wait(every_s):
            elapsed = time.monotonic() - t0
            eta = ""
            if expected_s is not None:
                left = expected_s - elapsed
                eta = f", about {_fmt(left)} left" if left > 0 else ", taking longer than usual"
            say(f"running, {_fmt(elapsed)} elapsed{eta}")

    say("started" + (f" (usually about {_fmt(expected_s)})" if expected_s else ""))
    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    except BaseException:
        stop.set()
        thread.join()
        say(f"failed after {_fmt(time.monotonic() - t0)}")
        raise
    stop.set()
    thread.join()
    say(f"done in {time.monotonic() - t0:.1f} s")
