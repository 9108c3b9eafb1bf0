"""GrammarMiniGPT: the NumPy grammar MiniGPT, layer for layer, as a torch.nn.Module.

Same architecture and numerics as `minigpt_np.model` (pre-LayerNorm blocks, eps 1e-5,
tanh-approximated GELU, causal attention written out from nn.Linear + softmax, untied LM
head with bias), so that in float64 the two agree to rounding. Only the LM-head softmax
differs by device: on CUDA it is kernel-lab's Triton softmax (`kernels_triton.softmax`),
elsewhere (or when kernels_triton is not installed) torch's; `model.softmax_impl` picks
one explicitly ("auto", "triton", "torch"). Likewise the training loss: on CUDA kernel-lab's
fused cross-entropy (`kernels_triton.cross_entropy`: loss and gradient from one read of the
logits, the gradient written over them), elsewhere F.cross_entropy; `model.loss_impl` picks
one explicitly ("auto", "fused", "torch").

    probs = model(idx)                 # (B, T, V) next-token probabilities
    loss  = model(idx, targets)        # mean cross-entropy (from the logits)
    logits = model.logits(idx)         # (B, T, V)
"""

from __future__ import annotations

import math
import warnings

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


SOFTMAX_IMPLS = ("auto", "triton", "torch")
_kernels_triton = None  # the kernels_triton module once imported; False once found missing


def triton_module(required: bool = False):
    """kernels_triton, imported once (an import statement costs about a microsecond a call:
    as much as the rest of the head's host work differs between the two softmaxes). Where it
    cannot be imported: ImportError if `required`, else None with one warning per process,
    and the model runs with torch's softmax everywhere."""
    global _kernels_triton
    if _kernels_triton is None or (required and _kernels_triton is False):
        try:
            import kernels_triton
        except ImportError as exc:
            if required:
                raise
            if _kernels_triton is None:
                warnings.warn(
                    f"kernels_triton is not importable ({exc}); the LM head uses torch's softmax and loss",
                    stacklevel=3,
                )
            _kernels_triton = False
            return None
        _kernels_triton = kernels_triton
    return _kernels_triton or None


LOSS_IMPLS = ("auto", "fused", "torch")
FUSED_LOSS_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def lm_loss(logits: torch.Tensor, targets: torch.Tensor, impl: str = "auto") -> torch.Tensor:
    """Mean cross-entropy of (N, V) logits against (N,) targets.

    - "auto": kernels_triton.cross_entropy for CUDA logits of the dtypes it is tuned for
      (F.cross_entropy where kernels_triton is not importable), F.cross_entropy otherwise;
    - "fused": kernels_triton.cross_entropy on any device it runs on (the CPU only under
      TRITON_INTERPRET=1); ImportError when it is not installed;
    - "torch": F.cross_entropy.

    The fused loss writes the gradient over `logits` during the forward (inplace_backward):
    they are the LM head's output, which no backward reads again, so training holds no
    logits-sized buffer beyond them. Equal to F.cross_entropy's loss and gradients to fp32
    rounding (tests/minigpt_torch/test_torch_fused_loss.py: <= 1e-6).
    """
    if impl == "fused" or (impl == "auto" and logits.is_cuda and logits.dtype in FUSED_LOSS_DTYPES):
        kernels_triton = _kernels_triton or triton_module(required=impl == "fused")
        if kernels_triton is not None:
            inplace = logits.requires_grad and torch.is_grad_enabled()
            return kernels_triton.cross_entropy(logits, targets, inplace_backward=inplace)
    elif impl not in LOSS_IMPLS:
        raise ValueError(f"loss impl must be one of {LOSS_IMPLS}, got {impl!r}")
    return F.cross_entropy(logits, targets)


def lm_head_softmax(logits: torch.Tensor, impl: str = "auto", *, overwrite: bool = False) -> torch.Tensor:
    """softmax over the vocabulary.

    - "auto": kernels_triton.softmax for CUDA tensors of the dtypes it takes (imported only
      then, so CPU use never needs Triton; torch's when it is not importable), torch's
      otherwise;
    - "triton": kernels_triton.softmax on any device it runs on (on the CPU only under
      Triton's interpreter, TRITON_INTERPRET=1); ImportError when it is not installed;
    - "torch": F.softmax.

    overwrite: `logits` is a temporary the caller does not read again, so the Triton head
    writes the probabilities over it (kernels_triton.softmax_) rather than allocating them,
    unless autograd needs it.
    """
    # One function, no helpers: in a decode this runs once a step with the caches holding the
    # rest of the forward, where each further Python call costs about a microsecond.
    if impl == "triton" or (impl == "auto" and logits.is_cuda and logits.dtype in TRITON_SOFTMAX_DTYPES):
        kernels_triton = _kernels_triton or triton_module(required=impl == "triton")
        if kernels_triton is not None:
            if overwrite and not logits.requires_grad:
                return kernels_triton.softmax_(logits, -1)
            return kernels_triton.softmax(logits, -1)
    elif impl not in SOFTMAX_IMPLS:
        raise ValueError(f"impl must be one of {SOFTMAX_IMPLS}, got {impl!r}")
    return F.softmax(logits, dim=-1)


class GrammarMiniGPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.softmax_impl = "auto"  # the LM head's softmax: see lm_head_softmax
        self.loss_impl = "auto"  # the training loss: see lm_loss
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.pos_emb = nn.Embedding(config.block_size, config.n_embd)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, eps=LN_EPS)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size)

    def hidden(self, idx: torch.Tensor) -> torch.Tensor:
        """(B, T) token ids -> (B, T, C): the last block's output, before the final LayerNorm."""
        T = idx.shape[1]
        if T > self.config.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {self.config.block_size}")
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device))
        for block in self.blocks:
            x = block(x)
        return x

    def logits(self, idx: torch.Tensor) -> torch.Tensor:
        """(B, T) token ids -> (B, T, V) logits."""
        return self.lm_head(self.ln_f(self.hidden(idx)))

    def next_token_probs(self, idx: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
        """(B, T) token ids and (B,) positions -> (B, V): the probabilities of the token after
        position last[b] of row b, the LM head run at that position only. Attention is causal, so
        ids after `last` do not change the result: a decode can pad its rows to one length."""
        x = self.hidden(idx)[torch.arange(idx.shape[0], device=idx.device), last]  # (B, C)
        return lm_head_softmax(self.lm_head(self.ln_f(x)), self.softmax_impl, overwrite=True)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        """Next-token probabilities (B, T, V); with `targets` (B, T), the mean
        cross-entropy instead (computed from the logits, as in training)."""
        logits = self.logits(idx)
        if targets is not None:
            return lm_loss(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), self.loss_impl)
        return lm_head_softmax(logits, self.softmax_impl, overwrite=True)

    @property
    def use_triton_softmax(self) -> bool:
        """False when the LM head is forced to torch's softmax."""
        return self.softmax_impl != "torch"

    @use_triton_softmax.setter
    def use_triton_softmax(self, value: bool) -> None:
        self.softmax_impl = "auto" if value else "torch"
