"""GrammarMiniGPT behind minigpt-np's NumPy-facing interfaces, so its sampling, top-k,
grammaticality check and validation loss run the torch model unchanged.

On CUDA a decoding step is replayed from a CUDA graph. At this model's size a step is some
60 small kernels, each of which costs the host far more time to launch than the GPU takes to
run it: eagerly, the GPU waits on Python. A graph launches them all in one call, so the step
takes about the GPU's time, and the kernels themselves (the LM-head softmax among them)
decide its speed.
"""

from __future__ import annotations

import numpy as np
import torch

from minigpt_torch.model import GrammarMiniGPT


def host_ids(idx) -> torch.Tensor:
    """NumPy token ids (any integer dtype, any layout) as a contiguous int64 tensor on the host."""
    return torch.from_numpy(np.ascontiguousarray(idx, dtype=np.int64))


class GraphedStep:
    """model.next_token_probs for `batch` rows, captured once as a CUDA graph and replayed.

    The graph reads fixed buffers: ids (batch, block_size), each row right-padded (causal
    attention makes the padding invisible at the positions read), and the last position. It
    reads the parameters where they were at capture: updates in place are seen, a model moved
    or given new parameter storage needs a new GraphedStep. The LM-head softmax is the model's
    `softmax_impl` at capture."""

    def __init__(self, model: GrammarMiniGPT, batch: int):
        device = next(model.parameters()).device
        self.model = model
        self.ids = torch.zeros(batch, model.config.block_size, dtype=torch.int64, device=device)
        self.last = torch.zeros(batch, dtype=torch.int64, device=device)
        side = torch.cuda.Stream(device)  # warm-up off the current stream, as capture requires
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side), torch.no_grad():
            for _ in range(2):  # plans and compiles every kernel before capture
                model.next_token_probs(self.ids, self.last)
        torch.cuda.current_stream(device).wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph), torch.no_grad():
            self.probs = model.next_token_probs(self.ids, self.last)  # (batch, V), the graph's output

    def __call__(self, idx: np.ndarray) -> np.ndarray:
        """(batch, T) ids, T <= block_size -> (batch, V) next-token probabilities."""
        t = idx.shape[1]
        self.ids[:, :t].copy_(host_ids(idx))
        self.last.fill_(t - 1)
        self.graph.replay()
        return self.probs.cpu().numpy()


class TorchLM:
    """NumPy token ids in, NumPy numbers out; computed by `model` on its own device
    (so on CUDA the probabilities come from the Triton LM-head softmax).

    cuda_graphs: decode through GraphedStep (one per batch size and LM-head softmax, made on
    first use); None: on CUDA devices."""

    def __init__(self, model: GrammarMiniGPT, *, cuda_graphs: bool | None = None):
        self.model = model
        self.config = model.config
        self.device = next(model.parameters()).device
        self.cuda_graphs = self.device.type == "cuda" if cuda_graphs is None else cuda_graphs
        if self.cuda_graphs and self.device.type != "cuda":
            raise ValueError(f"cuda_graphs needs a model on a CUDA device, not {self.device}")
        self._steps: dict[tuple[int, str], GraphedStep] = {}

    def _ids(self, idx) -> torch.Tensor:
        return host_ids(idx).to(self.device)

    @torch.no_grad()
    def next_token_probs(self, idx: np.ndarray) -> np.ndarray:
        """(B, T) ids -> (B, V) next-token probabilities (context cropped to block_size)."""
        idx = idx[:, -self.config.block_size :]
        if self.cuda_graphs:
            key = (idx.shape[0], self.model.softmax_impl)
            step = self._steps.get(key)
            if step is None:
                step = self._steps[key] = GraphedStep(self.model, idx.shape[0])
            return step(idx)
        probs = self.model(self._ids(idx))[:, -1]
        return probs.cpu().numpy()

    @torch.no_grad()
    def loss(self, idx: np.ndarray, targets: np.ndarray) -> float:
        return float(self.model(self._ids(idx), self._ids(targets)))
