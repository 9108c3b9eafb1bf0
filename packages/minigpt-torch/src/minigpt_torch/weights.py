"""Weights between minigpt-np checkpoints and GrammarMiniGPT, through one explicit name map.

Both sides store Linear weights as (out, in), so every tensor is copied as it is: no
transposes. Loading checks that the NumPy names and the module's parameters match one to
one, and every shape and dtype, and raises ValueError naming what does not.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import torch
from minigpt_np import checkpoint
from minigpt_np.model import GPTConfig, MiniGPT, param_shapes
from minigpt_np.tokenizer import Tokenizer

from minigpt_torch.model import GrammarMiniGPT

# NumPy name (inside block i: "blocks.{i}." + key) -> torch parameter name (same prefix).
BLOCK_NAMES = {
    "ln_1.w": "ln_1.weight",
    "ln_1.b": "ln_1.bias",
    "attn.qkv.w": "attn.qkv.weight",
    "attn.qkv.b": "attn.qkv.bias",
    "attn.proj.w": "attn.proj.weight",
    "attn.proj.b": "attn.proj.bias",
    "ln_2.w": "ln_2.weight",
    "ln_2.b": "ln_2.bias",
    "mlp.fc.w": "mlp.fc.weight",
    "mlp.fc.b": "mlp.fc.bias",
    "mlp.proj.w": "mlp.proj.weight",
    "mlp.proj.b": "mlp.proj.bias",
}
TOP_NAMES = {
    "tok_emb": "tok_emb.weight",
    "pos_emb": "pos_emb.weight",
    "ln_f.w": "ln_f.weight",
    "ln_f.b": "ln_f.bias",
    "lm_head.w": "lm_head.weight",
    "lm_head.b": "lm_head.bias",
}

NP_TO_TORCH_DTYPE = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64}


def name_map(config: GPTConfig) -> dict[str, str]:
    """Every NumPy parameter name -> its GrammarMiniGPT parameter name."""
    names = dict(TOP_NAMES)
    for i in range(config.n_layer):
        names |= {f"blocks.{i}.{n}": f"blocks.{i}.{t}" for n, t in BLOCK_NAMES.items()}
    return names


def load_numpy_params(model: GrammarMiniGPT, params: dict[str, np.ndarray]) -> GrammarMiniGPT:
    """Copy NumPy parameters into `model` (in place; returned for chaining).

    Every name of `params` must map to a parameter of the model and every parameter must
    be covered, with equal shapes and the model's dtype."""
    mapping = name_map(model.config)
    torch_params = dict(model.named_parameters())
    if sorted(mapping.values()) != sorted(torch_params):
        raise ValueError(f"name map and module disagree: {sorted(set(mapping.values()) ^ set(torch_params))}")
    missing = sorted(set(mapping) - set(params))
    extra = sorted(set(params) - set(mapping))
    if missing or extra:
        raise ValueError(f"NumPy parameters missing {missing}, unexpected {extra}")
    for np_name, torch_name in mapping.items():
        src, dst = params[np_name], torch_params[torch_name]
        if tuple(src.shape) != tuple(dst.shape):
            raise ValueError(
                f"{np_name} -> {torch_name}: shape {tuple(src.shape)}, parameter {tuple(dst.shape)}"
            )
        if NP_TO_TORCH_DTYPE.get(src.dtype) != dst.dtype:
            raise ValueError(f"{np_name} -> {torch_name}: dtype {src.dtype}, parameter {dst.dtype}")
    with torch.no_grad():
        for np_name, torch_name in mapping.items():
            torch_params[torch_name].copy_(torch.from_numpy(params[np_name]))
    return model


def from_numpy(np_model: MiniGPT, dtype: torch.dtype | None = None) -> GrammarMiniGPT:
    """A GrammarMiniGPT with the NumPy model's weights, in `dtype` (default: the NumPy
    model's own), on the CPU, in eval mode."""
    dtype = dtype or NP_TO_TORCH_DTYPE[np_model.dtype]
    model = GrammarMiniGPT(np_model.config).to(dtype)
    np_dtype = {v: k for k, v in NP_TO_TORCH_DTYPE.items()}[dtype]
    return load_numpy_params(
        model, {n: a.astype(np_dtype, copy=False) for n, a in np_model.params.items()}
    ).eval()


def to_numpy(model: GrammarMiniGPT) -> MiniGPT:
    """The NumPy model with this module's weights (copied to host memory)."""
    torch_params = dict(model.named_parameters())
    params = {n: torch_params[t].detach().cpu().numpy().copy() for n, t in name_map(model.config).items()}
    return MiniGPT(model.config, {n: params[n] for n in param_shapes(model.config)})


def save(path: str | Path, model: GrammarMiniGPT, tokenizer: Tokenizer, meta: dict | None = None) -> None:
    """Write `model` as a minigpt-np checkpoint."""
    checkpoint.save(path, to_numpy(model), tokenizer, meta)


def load(
    path: str | Path | None = None, dtype: torch.dtype | None = None
) -> tuple[GrammarMiniGPT, Tokenizer, dict]:
    """Read a minigpt-np checkpoint (default: the one shipped with minigpt-np)."""
    ckpt = checkpoint.load(path) if path is not None else shipped_checkpoint()
    return from_numpy(ckpt.model, dtype), ckpt.tokenizer, ckpt.meta


@functools.cache
def shipped_checkpoint() -> checkpoint.Checkpoint:
    return checkpoint.load()  # read once; from_numpy copies, so sharing the arrays is safe


def load_pretrained(dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu") -> GrammarMiniGPT:
    """The shipped grammar MiniGPT, in eval mode."""
    return load(dtype=dtype)[0].to(device)


def example_inputs(batch: int = 2, seq: int = 16, seed: int = 42) -> torch.Tensor:
    """(batch, seq) random token ids of the shipped model's vocabulary (int64, CPU)."""
    vocab_size = shipped_checkpoint().model.config.vocab_size
    return torch.randint(0, vocab_size, (batch, seq), generator=torch.Generator().manual_seed(seed))
