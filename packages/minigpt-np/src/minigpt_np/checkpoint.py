"""Checkpoints: one .npz of plain arrays, loaded without pickle.

Layout (every entry a NumPy array; strings are unicode arrays, never objects):

    meta.json     0-d str: {"format_version", "config", "dtype", "seed", "steps",
                  "command", ...} as JSON
    vocab         (V,) str: the tokenizer's vocabulary, in id order
    param/<name>  one per parameter, names and shapes as `model.param_shapes(config)`

`load` reads the zip itself (every member a plain .npy whose header matches its size,
no pickles, a bounded total size), then checks the format version, that the arrays are
exactly the config's parameters with their shapes and the recorded dtype, that every
parameter is finite, and that the vocabulary fits the config. Any mismatch, or a file
that is not a readable .npz, raises CheckpointError, a one-line message naming the file
and what is wrong; a damaged file raises nothing else. `save` writes atomically.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from minigpt_np._atomic import atomic_path
from minigpt_np.model import GPTConfig, MiniGPT, param_shapes
from minigpt_np.tokenizer import Tokenizer

FORMAT_VERSION = 1
SHIPPED = "data/grammar_minigpt.npz"  # inside the package


# The shipped checkpoint holds ~2 MB of arrays; a file declaring more than this is refused
# before anything is read.
MAX_ARRAY_BYTES = 1 << 30
FLOAT_DTYPES = ("float32", "float64")


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message is one line."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


@dataclass
class Checkpoint:
    model: MiniGPT
    tokenizer: Tokenizer
    meta: dict


def finite_json(value):
    """`value` with every NaN or infinite float replaced by None (null): JSON has no NaN,
    and a bare NaN breaks strict readers."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(v) for v in value]
    return value


def save(path: str | Path, model: MiniGPT, tokenizer: Tokenizer, meta: dict | None = None) -> None:
    """Write the checkpoint atomically: a reader (or a kill at any moment) sees the old
    file whole or the new one whole."""
    if len(tokenizer) != model.config.vocab_size:
        raise ValueError(
            f"tokenizer has {len(tokenizer)} tokens, the model's vocab_size is {model.config.vocab_size}"
        )
    meta = {
        **(meta or {}),
        "format_version": FORMAT_VERSION,
        "config": asdict(model.config),
        "dtype": model.dtype.name,
    }
    arrays = {f"param/{n}": a for n, a in model.params.items()}
    arrays["meta.json"] = np.array(json.dumps(finite_json(meta), sort_keys=True, allow_nan=False))
    arrays["vocab"] = np.array(tokenizer.vocab)
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez_compressed(f, **arrays)


def _read_npy(data: bytes, name: str) -> np.ndarray:
    """One .npy member: header checked against the bytes that follow it, no objects."""
    f = io.BytesIO(data)
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    else:
        raise CheckpointError(f"{name}: .npy format version {version} is not supported")
    if dtype.hasobject or dtype.kind not in "fiubcU":
        raise CheckpointError(f"{name}: dtype {dtype} is not a plain numeric or string type")
    count = math.prod(shape)
    if count * dtype.itemsize != len(data) - f.tell():
        raise CheckpointError(
            f"{name}: header says {shape} {dtype}, but {len(data) - f.tell()} data bytes follow it"
        )
    flat = np.frombuffer(data, dtype=dtype, count=count, offset=f.tell())
    return flat.reshape(shape, order="F" if fortran else "C").copy()


def _read_arrays(path) -> dict[str, np.ndarray]:
    """Every member of the .npz at `path`, by name without ".npy"."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            declared = sum(i.file_size for i in infos)
            if declared > MAX_ARRAY_BYTES:
                raise CheckpointError(
                    f"{path}: declares {declared} bytes of arrays, more than {MAX_ARRAY_BYTES}"
                )
            arrays = {}
            for info in infos:
                if not info.filename.endswith(".npy") or info.filename[:-4] in arrays:
                    raise CheckpointError(f"{path}: unexpected zip member {info.filename!r}")
                arrays[info.filename[:-4]] = _read_npy(zf.read(info), info.filename)
            return arrays
    except CheckpointError as exc:
        raise CheckpointError(str(exc) if str(exc).startswith(str(path)) else f"{path}: {exc}") from None
    except Exception as exc:  # noqa: BLE001
        # A damaged zip fails in many undocumented ways (BadZipFile, zlib.error, EOFError,
        # struct.error, ValueError, NotImplementedError, OverflowError, ...); each means
        # the same thing to the caller.
        raise CheckpointError(
            f"{path}: not a readable checkpoint .npz ({type(exc).__name__}: {exc})"
        ) from exc


def load(path: str | Path | None = None) -> Checkpoint:
    """Load a checkpoint (the one shipped in the package when `path` is None)."""
    if path is None:
        with resources.as_file(resources.files("minigpt_np") / SHIPPED) as p:
            return load(p)
    arrays = _read_arrays(path)
    for key in ("meta.json", "vocab"):
        if key not in arrays:
            raise CheckpointError(f"{path}: missing entry {key!r}")
    meta_array = arrays.pop("meta.json")
    if meta_array.shape != () or meta_array.dtype.kind != "U":
        raise CheckpointError(
            f"{path}: meta.json must be a 0-d string, got {meta_array.shape} {meta_array.dtype}"
        )
    try:
        meta = json.loads(str(meta_array))
        if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict):
            raise TypeError("expected an object with a 'config' object")
        config = GPTConfig(**meta["config"])
        if meta.get("dtype") not in FLOAT_DTYPES:
            raise ValueError(f"dtype must be one of {FLOAT_DTYPES}, got {meta.get('dtype')!r}")
        dtype = np.dtype(meta["dtype"])
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise CheckpointError(f"{path}: unreadable meta.json ({type(exc).__name__}: {exc})") from exc
    if meta.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"{path}: format_version {meta.get('format_version')!r}, expected {FORMAT_VERSION}"
        )

    vocab = arrays.pop("vocab")
    if vocab.dtype.kind != "U" or vocab.shape != (config.vocab_size,):
        raise CheckpointError(
            f"{path}: vocab must be ({config.vocab_size},) strings, got {vocab.shape} {vocab.dtype}"
        )

    unknown = sorted(k for k in arrays if not k.startswith("param/"))
    if unknown:
        raise CheckpointError(f"{path}: unexpected entries {unknown}")
    params = {k.removeprefix("param/"): a for k, a in arrays.items()}
    expected = param_shapes(config)
    missing = sorted(set(expected) - set(params))
    extra = sorted(set(params) - set(expected))
    if missing or extra:
        raise CheckpointError(f"{path}: parameters missing {missing}, unexpected {extra}")
    for name, shape in expected.items():
        a = params[name]
        if a.shape != shape or a.dtype != dtype:
            raise CheckpointError(f"{path}: {name} is {a.shape} {a.dtype}, expected {shape} {dtype}")
        if not np.isfinite(a).all():
            n_nan, n_inf = int(np.isnan(a).sum()), int(np.isinf(a).sum())
            raise CheckpointError(
                f"{path}: parameter {name} is not finite ({n_nan} NaN, {n_inf} infinite values)"
            )
    try:
        tokenizer = Tokenizer([str(w) for w in vocab])
    except ValueError as exc:
        raise CheckpointError(f"{path}: bad vocabulary: {exc}") from exc
    return Checkpoint(MiniGPT(config, {n: params[n] for n in expected}), tokenizer, meta)
