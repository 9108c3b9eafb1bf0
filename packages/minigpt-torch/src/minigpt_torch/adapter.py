"""GrammarMiniGPT behind minigpt-np's NumPy-facing interfaces, so its sampling, top-k,
grammaticality check and validation loss run the torch model unchanged."""

from __future__ import annotations

import numpy as np
import torch

from minigpt_torch.model import GrammarMiniGPT


class TorchLM:
    """NumPy token ids in, NumPy numbers out; computed by `model` on its own device
    (so on CUDA the probabilities come from the Triton LM-head softmax)."""

    def __init__(self, model: GrammarMiniGPT):
        self.model = model
        self.config = model.config
        self.device = next(model.parameters()).device

    def _ids(self, idx) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(idx, dtype=np.int64)).to(self.device)

    @torch.no_grad()
    def next_token_probs(self, idx: np.ndarray) -> np.ndarray:
        """(B, T) ids -> (B, V) next-token probabilities (context cropped to block_size)."""
        probs = self.model(self._ids(idx[:, -self.config.block_size :]))[:, -1]
        return probs.cpu().numpy()

    @torch.no_grad()
    def loss(self, idx: np.ndarray, targets: np.ndarray) -> float:
        return float(self.model(self._ids(idx), self._ids(targets)))
