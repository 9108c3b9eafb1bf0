"""minigpt_torch: the grammar MiniGPT of minigpt-np, ported layer for layer to PyTorch.

    import minigpt_torch
    model = minigpt_torch.load_pretrained()          # the shipped checkpoint, eval mode
    probs = model(minigpt_torch.example_inputs())    # (2, 16, 616) next-token probabilities

`model` (GrammarMiniGPT), `weights` (the NumPy <-> torch name map, load / export),
`adapter` (the port behind minigpt-np's sampling interface), `train` (one process or
DDP under torchrun), `checks` (labtools checks), `cli` (`minigpt-torch`).
"""

import importlib.metadata as _metadata

try:
    __version__ = _metadata.version("kernel-lab-minigpt-torch")
except _metadata.PackageNotFoundError:  # imported from a source tree with no installed metadata
    __version__ = "0+unknown"

# Looked up on first use (they import torch), so `minigpt-torch --help` answers without torch.
_EXPORTS = {
    "GrammarMiniGPT": "minigpt_torch.model",
    "example_inputs": "minigpt_torch.weights",
    "load_pretrained": "minigpt_torch.weights",
}
__all__ = ["GrammarMiniGPT", "example_inputs", "load_pretrained"]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'minigpt_torch' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
