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

from minigpt_torch.model import GrammarMiniGPT
from minigpt_torch.weights import example_inputs, load_pretrained

__all__ = ["GrammarMiniGPT", "example_inputs", "load_pretrained"]
