"""Atomic file writes: a reader sees the old file whole or the new one whole, never a part.
Each distribution carries its own copy of these few lines, so it installs alone."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """Writes a new file beside `path` (one file system: the rename is atomic), made as open() makes files
    (0o666 less the umask), fsyncs it and os.replace()s `path` with it; on an exception the new file is removed."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        with open(tmp, "rb+") as f:
            f.write(text.encode(encoding))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
