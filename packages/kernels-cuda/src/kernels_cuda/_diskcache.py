"""The codegen core's disk cache: one entry per key, verified before it is served.

An entry is three files in the cache folder: `<key>.json` and the cubin and PTX it names, each
named by key and content hash (`<key>-<sha256[:16]>.cubin`). The JSON carries the content hashes
and a digest over itself (key, hashes, and whatever the caller stores beside them), so a
truncated or edited JSON, a garbage or swapped cubin, or a forged field fails `read` with
`BadEntry` naming what is wrong; the caller discards such an entry and writes a new one.

Writes are atomic (`_atomic`), content files go first and the JSON last, so a reader finds a
whole entry or none. Two processes writing one key at once each write their own content files
(or the same bytes), and whichever JSON lands last names files that match its hashes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from kernels_cuda import _atomic

FORMAT = 2  # bump when the entry layout changes: older entries then fail `read` and are rebuilt


class BadEntry(Exception):
    """An entry that must not be served; the message says why, in a few words."""


@dataclass(frozen=True)
class Entry:
    cubin_path: Path
    ptx_path: Path
    cubin: bytes
    ptx: bytes
    fields: dict  # what the writer stored beside the content (spec, arch, resources, log, ...)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(meta: dict) -> str:
    """The hash over an entry's JSON, all of it but the digest itself."""
    return sha256(json.dumps({k: v for k, v in meta.items() if k != "digest"}, sort_keys=True).encode())


def read(folder: Path, key: str) -> Entry | None:
    """The verified entry for `key`; None if there is none; BadEntry if one is there but unusable."""
    meta_path = folder / f"{key}.json"
    if not meta_path.exists():
        return None
    try:
        meta = json.loads(meta_path.read_bytes())
    except (OSError, ValueError) as exc:
        raise BadEntry(f"unreadable JSON ({type(exc).__name__})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise BadEntry("unknown entry format")
    if meta.get("key") != key or meta.get("digest") != digest(meta):
        raise BadEntry("digest does not match the key and content")
    try:
        cubin_path, ptx_path = folder / meta["cubin"], folder / meta["ptx"]
        if cubin_path.parent != folder or ptx_path.parent != folder:
            raise BadEntry("file names outside the cache folder")
        cubin, ptx = cubin_path.read_bytes(), ptx_path.read_bytes()
        fields = meta["fields"]
    except (OSError, KeyError, TypeError) as exc:
        raise BadEntry(f"incomplete entry ({type(exc).__name__})") from None
    if sha256(cubin) != meta.get("cubin_sha256") or not cubin.startswith(b"\x7fELF"):
        raise BadEntry("cubin does not match its hash")
    if sha256(ptx) != meta.get("ptx_sha256"):
        raise BadEntry("PTX does not match its hash")
    if not isinstance(fields, dict):
        raise BadEntry("malformed fields")
    return Entry(cubin_path, ptx_path, cubin, ptx, fields)


def write(folder: Path, key: str, cubin: bytes, ptx: bytes, fields: dict) -> Entry:
    """Store an entry (`fields` must be JSON-serialisable) and return it as `read` would."""
    folder.mkdir(parents=True, exist_ok=True)
    cubin_sha, ptx_sha = sha256(cubin), sha256(ptx)
    cubin_path, ptx_path = folder / f"{key}-{cubin_sha[:16]}.cubin", folder / f"{key}-{ptx_sha[:16]}.ptx"
    _atomic.atomic_write_bytes(cubin_path, cubin)
    _atomic.atomic_write_bytes(ptx_path, ptx)
    meta = {
        "format": FORMAT,
        "key": key,
        "cubin": cubin_path.name,
        "ptx": ptx_path.name,
        "cubin_sha256": cubin_sha,
        "ptx_sha256": ptx_sha,
        "fields": fields,
    }
    meta["digest"] = digest(meta)
    _atomic.atomic_write_text(folder / f"{key}.json", json.dumps(meta, indent=1))  # last: marks it whole
    return Entry(cubin_path, ptx_path, cubin, ptx, fields)
