"""GrammarMiniGPT: the NumPy grammar MiniGPT, layer for layer, as a torch.nn.Module.

Same architecture and numerics as `minigpt_np.model` (pre-LayerNorm blocks, eps 1e-5,
tanh-approximated GELU, causal attention written out from nn.Linear + softmax, untied LM
head with bias), so that in float64 the two agree to rounding. Only the LM-head softmax
differs by device: on CUDA it is kernel-lab's Triton softmax (`kernels_triton.softmax`),
elsewhere torch's.

    probs = model(idx)                 # (B, T, V) next-token probabilities
    loss  = model(idx, targets)        # mean cross-entropy (from the logits)
    logits = model.logits(idx)         # (B, T, V)
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from minigpt_np.layers import LN_EPS
from minigpt_np.model import GPTConfig
from torch import nn

# The dtypes kernels_triton.softmax takes; others (float64) use torch's softmax on CUDA too.
TRITON_SOFTMAX_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.n_head = config.n_head
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.proj = nn.Linear(config.n_embd, config.n_embd)
        future = torch.ones(config.block_size, config.block_size, dtype=torch.bool).triu(1)
        self.register_buffer("future", future, persistent=False)  # (T, T): True above the diagonal

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)  # each (B, T, C)
        q, k, v = (
            t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v)
        )  # (B, H, T, D)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.n_head))  # (B, H, T, T)
        att = F.softmax(scores.masked_fill(self.future[:T, :T], float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.act = nn.GELU(approximate="tanh")
        self.proj = nn.Linear(4 * config.n_embd, config.n_embd)

    def forward(self, x):
        return self.proj(self.act(self.fc(x)))


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=LN_EPS)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=LN_EPS)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


def lm_head_softmax(logits: torch.Tensor, use_triton: bool = True) -> torch.Tensor:
    """softmax over the vocabulary: kernels_triton.softmax for CUDA tensors of the dtypes
    it takes (imported here, so CPU use never needs Triton), torch's otherwise."""
    if use_triton and logits.is_cuda and logits.dtype in TRITON_SOFTMAX_DTYPES:
        from kernels_triton import softmax

        return softmax(logits, dim=-1)
    return F.softmax(logits, dim=-1)


class GrammarMiniGPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.use_triton_softmax = True  # the CUDA LM-head softmax; False: torch's (for comparisons)
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.pos_emb = nn.Embedding(config.block_size, config.n_embd)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, eps=LN_EPS)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size)

    def logits(self, idx: torch.Tensor) -> torch.Tensor:
        """(B, T) token ids -> (B, T, V) logits."""
        T = idx.shape[1]
        if T > self.config.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {self.config.block_size}")
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        """Next-token probabilities (B, T, V); with `targets` (B, T), the mean
        cross-entropy instead (computed from the logits, as in training)."""
        logits = self.logits(idx)
        if targets is not None:
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return lm_head_softmax(logits, self.use_triton_softmax)
