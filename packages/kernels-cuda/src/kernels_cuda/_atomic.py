"""Atomic file writes: a reader sees the old file whole or the new one whole, never a part.

Each write goes to a new file in the destination's folder (one file system, so the rename is
atomic), is fsynced, then replaces the destination with ``os.replace``.
Each distribution carries its own copy of these few lines, so it installs alone.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a new empty file beside ``path``, made as open() makes files (0o666 less the
    umask); on success it replaces ``path``, on an exception it is removed."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:  # made inside the try: a signal's exception the moment the file exists still removes it
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if not (isinstance(exc, FileExistsError) and exc.filename == str(tmp)):  # else another's file
            tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    atomic_write_bytes(path, text.encode(encoding))
