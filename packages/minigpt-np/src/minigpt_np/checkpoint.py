"""Checkpoints: one .npz of plain arrays, loaded without pickle.

Layout (every entry a NumPy array; strings are unicode arrays, never objects):

    meta.json     0-d str: {"format_version", "config", "dtype", "seed", "steps",
                  "command", ...} as JSON
    vocab         (V,) str: the tokenizer's vocabulary, in id order
    param/<name>  one per parameter, names and shapes as `model.param_shapes(config)`

`load` checks the format version, that the arrays are exactly the config's parameters
with their shapes and the recorded dtype, and that the vocabulary fits the config; any
mismatch, or a file that is not a readable .npz, raises CheckpointError naming it.
"""

from __future__ import annotations

import json
import math
import zipfile
import zlib
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from minigpt_np._atomic import atomic_path
from minigpt_np.model import GPTConfig, MiniGPT, param_shapes
from minigpt_np.tokenizer import Tokenizer

FORMAT_VERSION = 1
SHIPPED = "data/grammar_minigpt.npz"  # inside the package


class CheckpointError(ValueError):
    pass


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


def load(path: str | Path | None = None) -> Checkpoint:
    """Load a checkpoint (the one shipped in the package when `path` is None)."""
    if path is None:
        with resources.as_file(resources.files("minigpt_np") / SHIPPED) as p:
            return load(p)
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error) as exc:
        raise CheckpointError(
            f"{path}: not a readable checkpoint .npz ({type(exc).__name__}: {exc})"
        ) from exc

    for key in ("meta.json", "vocab"):
        if key not in arrays:
            raise CheckpointError(f"{path}: missing entry {key!r}")
    try:
        meta = json.loads(str(arrays.pop("meta.json")))
        config = GPTConfig(**meta["config"])
        dtype = np.dtype(meta["dtype"])
    except (ValueError, TypeError, KeyError) as exc:
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
    try:
        tokenizer = Tokenizer([str(w) for w in vocab])
    except ValueError as exc:
        raise CheckpointError(f"{path}: bad vocabulary: {exc}") from exc
    return Checkpoint(MiniGPT(config, {n: params[n] for n in expected}), tokenizer, meta)
