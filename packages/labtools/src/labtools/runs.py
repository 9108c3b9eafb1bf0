"""Run folders: each `lab` command that writes files writes them into a folder of its own.

- By default a fresh folder ``out/<command>-<UTC time>-<6 hex digits>/``: created with
  ``mkdir`` (never reused), so two runs, of the same command or of different ones, never
  write into the same folder, and a later run leaves an earlier one byte-identical.
- Or a folder the user names (``--out DIR``), checked before any work starts: not a
  symbolic link (a link would send the files somewhere the user did not name), a folder
  or creatable as one, writable, and new or empty: a run folder holds one run's outputs,
  so a second run never mixes its files with an earlier run's (commands that add to a
  folder on purpose, like `lab inductor report`, open it with ``fresh=False``). It is
  locked for the run: ``DIR/.lab.lock`` is held with ``flock``, and a second run on the
  same folder fails at once, naming the first.
- Every file goes through :mod:`labtools.atomic`; when the command ends, ``run.json``
  records the command, device, times, status and the files the run wrote (what was in
  the folder when the run opened it is not listed unless the run rewrote it), and a
  ``REPORT.md`` links those files (a command that writes its own REPORT.md keeps it).

`lab runs` lists the folders under ``out/`` from their ``run.json`` (or the
``manifest.json`` that `lab run` writes).
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import json
import os
import secrets
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from labtools.atomic import atomic_write_text

DEFAULT_ROOT = Path("out")
RUN_RECORD = "run.json"
REPORT = "REPORT.md"
LOCK = ".lab.lock"
RUN_KIND = "labtools.run"


class OutputError(Exception):
    """The output folder cannot be used; the message names the option and why."""


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _iso(t: datetime.datetime) -> str:
    return t.isoformat(timespec="seconds")


@dataclass
class Run:
    """One command's output folder, locked while the run is open."""

    path: Path
    command: str  # "bench", "roofline", "inductor dump", ...
    command_line: str = ""
    named: bool = False  # the user named it (--out); otherwise a fresh folder under out/
    started: datetime.datetime = field(default_factory=utc_now)
    _lock_fd: int | None = field(default=None, repr=False)
    # relative path -> (mtime_ns, size) of each file present when the run opened the folder
    _before: dict[str, tuple[int, int]] = field(default_factory=dict, repr=False)

    def file(self, name: str) -> Path:
        return self.path / name

    def write_text(self, name: str, text: str) -> Path:
        path = self.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
        return path

    def write_json(self, name: str, obj) -> Path:
        return self.write_text(name, json.dumps(obj, indent=1, allow_nan=False) + "\n")

    def files(self) -> list[str]:
        """The files this run wrote (relative paths, sorted): new since the run opened the
        folder, or rewritten; the run's own bookkeeping excluded."""
        skip = {LOCK, RUN_RECORD}
        return [
            rel
            for rel, stamp in sorted(_snapshot(self.path).items())
            if rel not in skip and not rel.endswith(".tmp") and self._before.get(rel) != stamp
        ]

    def finish(self, *, device: str | None, status: str = "ok", exit_status: int = 0, **extra) -> Path:
        """Write run.json (and a REPORT.md linking the run's files unless the command
        wrote its own), then release the lock. Returns run.json's path."""
        finished = utc_now()
        files = self.files()
        if REPORT not in files:
            self.write_text(REPORT, self._report(device, status, finished, files))
            files = self.files()
        record = {
            "kind": RUN_KIND,
            "command": self.command,
            "command_line": self.command_line,
            "folder": self.path.name,
            "device": device,
            "started": _iso(self.started),
            "finished": _iso(finished),
            "seconds": round((finished - self.started).total_seconds(), 3),
            "status": status,
            "exit_status": exit_status,
            "files": files,
            **extra,
        }
        path = self.write_json(RUN_RECORD, record)
        self.close()
        return path

    def _report(self, device: str | None, status: str, finished: datetime.datetime, files: list[str]) -> str:
        lines = [
            f"# lab {self.command}: {self.path.name}",
            "",
            f"- command: `{self.command_line or 'lab ' + self.command}`",
            f"- device: {device or 'none'}; started {_iso(self.started)}, finished {_iso(finished)}; "
            f"status: {status}",
            "",
            "## Files of this run",
            "",
            *[f"- [{f}]({quote(f)})" for f in files],
            f"- [{RUN_RECORD}]({RUN_RECORD})",
            "",
        ]
        return "\n".join(lines)

    def close(self) -> None:
        """Release the lock (idempotent). The lock file is removed first, so a run that
        opened it meanwhile sees a stale inode and tries again (see `_lock`)."""
        if self._lock_fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path / LOCK)
        os.close(self._lock_fd)  # closing releases the flock
        self._lock_fd = None

    def __enter__(self) -> Run:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        # A run that ends by an exception (a bug, Ctrl-C) still says so in its run.json,
        # so `lab runs` shows it and nobody mistakes its files for a finished run's.
        if exc_type is not None and self._lock_fd is not None:
            status = "interrupted" if interrupted(exc) else f"error: {exc_type.__name__}"
            with contextlib.suppress(Exception):
                self.finish(device=None, status=status, exit_status=130 if status == "interrupted" else 1)
        self.close()


def interrupted(exc: BaseException | None) -> bool:
    """Whether `exc` is a Ctrl-C or was raised by one: a SIGINT that lands while a C
    extension initialises (matplotlib's `_image`) surfaces as an ImportError whose cause
    is the KeyboardInterrupt."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """relative path -> (mtime_ns, size) of every regular file under `folder` (links not followed)."""
    out = {}
    for p in folder.rglob("*"):
        with contextlib.suppress(OSError):
            st = p.lstat()
            if p.is_file() and not p.is_symlink():
                out[p.relative_to(folder).as_posix()] = (st.st_mtime_ns, st.st_size)
    return out


def check_empty(path: Path, option: str = "--out") -> None:
    """OutputError unless `path` holds nothing (a lock file of a finished run aside)."""
    with contextlib.suppress(FileNotFoundError):
        entries = sorted(p.name for p in Path(path).iterdir() if p.name != LOCK)
        if entries:
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            raise OutputError(
                f"argument {option}: {path} is not empty ({len(entries)} entries: {shown}); "
                "a run folder holds one run's outputs: name a new or empty folder, or leave "
                f"{option} out for a fresh one under {DEFAULT_ROOT}/"
            )


def new_folder(command: str, root: Path = DEFAULT_ROOT) -> Path:
    """A folder under `root` that did not exist before: <command>-<UTC time>-<random>."""
    root = Path(root)
    if root.is_symlink() or (root.exists() and not root.is_dir()):
        raise OutputError(f"{root} must be a folder (not a file or a symbolic link) to hold the runs")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create {root}: {exc.strerror or exc}") from None
    stamp = utc_now().strftime("%Y%m%dT%H%M%SZ")
    slug = command.replace(" ", "-")
    for _ in range(64):
        path = root / f"{slug}-{stamp}-{secrets.token_hex(3)}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
        except OSError as exc:
            raise OutputError(f"cannot create a run folder in {root}: {exc.strerror or exc}") from None
    raise OutputError(f"no free run folder name in {root}")  # 64 collisions of 24 random bits


def check_folder(path: Path, option: str = "--out") -> Path:
    """A user-named output folder, made ready: not a symbolic link, a folder (created if
    missing), writable. Raises OutputError naming `option` otherwise."""
    path = Path(path)
    if path.is_symlink():
        raise OutputError(
            f"argument {option}: {path} is a symbolic link (to {os.readlink(path)}); name the folder itself"
        )
    if path.exists() and not path.is_dir():
        raise OutputError(f"argument {option}: {path} exists and is not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"argument {option}: cannot create {path}: {exc.strerror or exc}") from None
    try:  # os.access says yes to root on a read-only mount: try a real write
        with tempfile.NamedTemporaryFile(dir=path, prefix=".lab-probe-"):
            pass
    except OSError as exc:
        raise OutputError(f"argument {option}: cannot write in {path}: {exc.strerror or exc}") from None
    return path


def _lock(path: Path, command_line: str, option: str) -> int:
    """Hold DIR/.lab.lock (flock, exclusive, non-blocking); return its descriptor."""
    lock = path / LOCK
    for _ in range(16):
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            raise OutputError(f"argument {option}: cannot create {lock}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_holder(fd)
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise OutputError(
                    f"argument {option}: {path} is in use by another lab run ({holder}); "
                    "wait for it or name another folder"
                ) from None
            raise OutputError(f"argument {option}: cannot lock {lock}: {exc.strerror or exc}") from None
        try:  # the holder before us may have removed the file between our open and our flock
            same = os.stat(lock, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            info = f"{command_line or 'lab'} (pid {os.getpid()}, since {_iso(utc_now())})"
            os.ftruncate(fd, 0)
            os.write(fd, info.encode())
            return fd
        os.close(fd)
    raise OutputError(f"argument {option}: could not lock {lock}: it keeps being replaced")


def _read_holder(fd: int) -> str:
    with contextlib.suppress(OSError):
        text = os.pread(fd, 400, 0).decode(errors="replace").strip()
        if text:
            return text
    return "holder unknown"


def open_run(
    command: str,
    out: Path | None = None,
    *,
    command_line: str = "",
    root: Path = DEFAULT_ROOT,
    option: str = "--out",
    fresh: bool = True,
) -> Run:
    """The folder a command writes to: `out` (checked and locked; new or empty unless
    `fresh` is False) or a new one under `root`."""
    if out is None:
        path, named = new_folder(command, root), False
    else:
        path, named = check_folder(out, option), True
    fd = _lock(path, command_line, option)  # first: a folder in use says so, not "not empty"
    try:
        if fresh:
            check_empty(path, option)
        before = {} if fresh else _snapshot(path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path / LOCK)
        os.close(fd)
        raise
    return Run(path, command, command_line, named, _lock_fd=fd, _before=before)


# --- listing --------------------------------------------------------------------------------


def describe(folder: Path) -> dict | None:
    """What a run folder holds, from run.json, else lab run's manifest.json; None if neither."""
    for name in (RUN_RECORD, "manifest.json"):
        path = folder / name
        if not path.is_file():
            continue
        try:
            doc = json.loads(path.read_text())
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            return {"folder": folder.name, "status": f"unreadable {name}: {type(exc).__name__}"}
        if name == RUN_RECORD:
            return {
                "folder": folder.name,
                "command": doc.get("command") or "?",
                "device": doc.get("device") or "none",
                "date": doc.get("started") or "?",
                "status": doc.get("status") or "?",
                "files": len(doc.get("files") or []),
            }
        gpu = (doc.get("gpu") or {}).get("model")
        return {
            "folder": folder.name,
            "command": "run",
            "device": f"{doc.get('device', '?')}" + (f" ({gpu})" if gpu else ""),
            "date": doc.get("date") or "?",
            "status": "manifest only",
            "files": sum(1 for p in folder.iterdir() if p.is_file()),
        }
    return None


def list_runs(root: Path = DEFAULT_ROOT) -> list[dict]:
    """Every run folder directly under `root`, oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [d for p in sorted(root.iterdir()) if p.is_dir() and (d := describe(p)) is not None]
    return sorted(found, key=lambda r: (r.get("date") or "", r["folder"]))
