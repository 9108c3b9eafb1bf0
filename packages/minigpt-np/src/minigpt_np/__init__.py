"""minigpt_np: the grammar MiniGPT in NumPy.

A seeded English-like grammar corpus (`grammar`, `lexicon`, `corpus`), a word tokenizer
(`tokenizer`), a pre-LayerNorm transformer with a hand-written backward (`layers`,
`attention`, `model`), AdamW training (`optim`, `train`), .npz checkpoints
(`checkpoint`) and sampling (`sample`). Import the modules themselves; this file imports
only importlib.metadata (for __version__), so `minigpt_np.cli` can configure BLAS threads
before NumPy loads.
"""

import importlib.metadata as _metadata

try:
    __version__ = _metadata.version("kernel-lab-minigpt-np")
except _metadata.PackageNotFoundError:  # imported from a source tree with no installed metadata
    __version__ = "0+unknown"
