"""minigpt_np: the grammar MiniGPT in NumPy.

A seeded English-like grammar corpus (`grammar`, `lexicon`, `corpus`), a word tokenizer
(`tokenizer`), a pre-LayerNorm transformer with a hand-written backward (`layers`,
`attention`, `model`), AdamW training (`optim`, `train`), .npz checkpoints
(`checkpoint`) and sampling (`sample`).

The public functions are importable from here (`minigpt_np.load()`, `minigpt_np.generate`,
`minigpt_np.train_model`, ...). They are looked up on first use, not imported with the package:
this file imports only importlib, so `minigpt_np.cli` can configure BLAS threads before
NumPy loads.

    import minigpt_np
    ckpt = minigpt_np.load()                      # the shipped checkpoint (or load(path))
    print(minigpt_np.generate(ckpt.model, ckpt.tokenizer, "Yesterday I"))
    print(minigpt_np.topk(ckpt.model, ckpt.tokenizer, "Tomorrow she", k=3))
    result = minigpt_np.train_model(minigpt_np.TrainConfig(steps=20, n_train_sentences=500))
"""

import importlib as _importlib
import importlib.metadata as _metadata

try:
    __version__ = _metadata.version("kernel-lab-minigpt-np")
except _metadata.PackageNotFoundError:  # imported from a source tree with no installed metadata
    __version__ = "0+unknown"

# public name -> the module that defines it (or (module, its name there))
_EXPORTS: dict[str, str | tuple[str, str]] = {
    "load": "minigpt_np.checkpoint",
    "save": "minigpt_np.checkpoint",
    "Checkpoint": "minigpt_np.checkpoint",
    "CheckpointError": "minigpt_np.checkpoint",
    "generate": "minigpt_np.sample",
    "topk": "minigpt_np.sample",
    "grammatical_rate": "minigpt_np.sample",
    "train_model": ("minigpt_np.train", "train"),  # not `train`: that name is the submodule's
    "TrainConfig": "minigpt_np.train",
    "TrainResult": "minigpt_np.train",
    "TrainingDiverged": "minigpt_np.train",
    "MiniGPT": "minigpt_np.model",
    "GPTConfig": "minigpt_np.model",
    "Tokenizer": "minigpt_np.tokenizer",
    "Corpus": "minigpt_np.corpus",
    "make_corpus": "minigpt_np.corpus",
    "quality": "minigpt_np.evaluate",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'minigpt_np' has no attribute {name!r}")
    module, attr = module if isinstance(module, tuple) else (module, name)
    value = getattr(_importlib.import_module(module), attr)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
