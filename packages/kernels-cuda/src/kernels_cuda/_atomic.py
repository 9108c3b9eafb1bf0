"""Atomic file writes: a reader sees the old file whole or the new one whole, never a part.

A private copy of labtools.atomic (kernels_cuda does not depend on labtools). Each write goes to a
temporary file in the destination's folder (so the final rename stays on one file system and is
atomic), is flushed and fsynced, and then replaces the destination with ``os.replace``. A write
that is interrupted leaves only a stray ``.<name>.*.tmp`` file.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path``.

    For writers that insist on a file name (``np.savez``, ``matplotlib.savefig``). On an
    exception the temporary file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    tmp_path = _new_file_beside(path)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise
    _fsync_dir(path.parent)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(data)


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically."""
    atomic_write_bytes(path, text.encode(encoding))


def _new_file_beside(path: Path) -> Path:
    """A new empty file ``.<name>.<random>.tmp`` in ``path``'s folder, created as open() creates
    files (mode 0o666 less the umask; tempfile.mkstemp's would be 0o600, readable by its owner
    only), never one that already exists (O_EXCL)."""
    while True:
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue


def _fsync_dir(folder: Path) -> None:
    # The rename is durable only once the folder's entry is on disk; not every file system
    # lets a folder be opened, so this is best effort.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
