"""The grammar MiniGPT: a pre-LayerNorm decoder-only transformer in NumPy.

    x0     = tok_emb[idx] + pos_emb[:T]                      (B, T, C)
    x      = x + attn(ln_1(x));  x = x + mlp(ln_2(x))        L blocks
    logits = lm_head(ln_f(x))                                (B, T, V)
    probs  = softmax(logits)

mlp(x) = proj(gelu(fc(x))) with a 4C hidden layer. Parameters live in one flat dict
name -> array (names in `param_shapes`); forward keeps per-layer caches and `backward`
runs the layers' hand-written backwards in reverse.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from minigpt_np import layers
from minigpt_np.attention import causal_self_attention, causal_self_attention_backward

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 616
    block_size: int = 32  # the longest context
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 64

    def __post_init__(self):
        for name, value in asdict(self).items():
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"GPTConfig.{name} must be a positive int, got {value!r}")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be a multiple of n_head ({self.n_head})")

    @property
    def head_size(self) -> int:
        return self.n_embd // self.n_head


def param_shapes(config: GPTConfig) -> dict[str, tuple[int, ...]]:
    """Every parameter's name and shape, in a fixed order."""
    C, V = config.n_embd, config.vocab_size
    shapes = {"tok_emb": (V, C), "pos_emb": (config.block_size, C)}
    for i in range(config.n_layer):
        p = f"blocks.{i}."
        shapes |= {
            p + "ln_1.w": (C,), p + "ln_1.b": (C,),
            p + "attn.qkv.w": (3 * C, C), p + "attn.qkv.b": (3 * C,),
            p + "attn.proj.w": (C, C), p + "attn.proj.b": (C,),
            p + "ln_2.w": (C,), p + "ln_2.b": (C,),
            p + "mlp.fc.w": (4 * C, C), p + "mlp.fc.b": (4 * C,),
            p + "mlp.proj.w": (C, 4 * C), p + "mlp.proj.b": (C,),
        }  # fmt: skip
    shapes |= {"ln_f.w": (C,), "ln_f.b": (C,), "lm_head.w": (V, C), "lm_head.b": (V,)}
    return shapes


def init_params(config: GPTConfig, seed: int, dtype=np.float32) -> dict[str, np.ndarray]:
    """GPT-2's initialisation: weights N(0, 0.02), the two projections into the residual
    stream N(0, 0.02 / sqrt(2 L)), biases 0, LayerNorm weights 1."""
    rng = np.random.default_rng(seed)
    residual_std = 0.02 / math.sqrt(2 * config.n_layer)
    params = {}
    for name, shape in param_shapes(config).items():
        if name.startswith("ln") or ".ln_" in name:
            value = np.ones(shape) if name.endswith(".w") else np.zeros(shape)
        elif name.endswith(".b"):
            value = np.zeros(shape)
        else:
            std = residual_std if name.endswith("proj.w") else 0.02
            value = rng.normal(0.0, std, size=shape)
        params[name] = value.astype(dtype)
    return params


def check_params(config: GPTConfig, params: dict[str, np.ndarray]) -> np.dtype:
    """Raise ValueError unless `params` has exactly the config's names and shapes, all in
    one float dtype; return that dtype."""
    expected = param_shapes(config)
    missing = [n for n in expected if n not in params]
    extra = [n for n in params if n not in expected]
    if missing or extra:
        raise ValueError(f"parameters do not match the config: missing {missing}, unexpected {extra}")
    wrong = {n: a.shape for n, a in params.items() if a.shape != expected[n]}
    if wrong:
        raise ValueError(f"parameter shapes do not match the config: {wrong} (expected {expected})")
    dtypes = {a.dtype for a in params.values()}
    if len(dtypes) != 1 or next(iter(dtypes)) not in FLOAT_DTYPES:
        raise ValueError(f"parameters must all be float32 or all float64, got {sorted(map(str, dtypes))}")
    return next(iter(dtypes))


class MiniGPT:
    def __init__(self, config: GPTConfig, params: dict[str, np.ndarray]):
        self.dtype = check_params(config, params)
        self.config = config
        self.params = params

    @classmethod
    def init(cls, config: GPTConfig, seed: int = 0, dtype=np.float32) -> MiniGPT:
        return cls(config, init_params(config, seed, dtype))

    def astype(self, dtype) -> MiniGPT:
        return MiniGPT(self.config, {n: a.astype(dtype) for n, a in self.params.items()})

    def num_params(self) -> int:
        return sum(a.size for a in self.params.values())

    # --- forward -----------------------------------------------------------------------

    def check_ids(self, idx) -> np.ndarray:
        idx = np.asarray(idx)
        if idx.dtype.kind not in "iu":
            raise TypeError(f"token ids must be integers, got dtype {idx.dtype}")
        if idx.ndim != 2 or idx.size == 0:
            raise ValueError(f"token ids must be a non-empty (B, T) array, got shape {idx.shape}")
        if idx.shape[1] > self.config.block_size:
            raise ValueError(f"sequence length {idx.shape[1]} exceeds block_size {self.config.block_size}")
        if idx.min() < 0 or idx.max() >= self.config.vocab_size:
            raise ValueError(
                f"token ids must lie in [0, {self.config.vocab_size}), got [{idx.min()}, {idx.max()}]"
            )
        return idx

    def embed(self, idx) -> np.ndarray:
        """(B, T) ids -> (B, T, C) input embeddings: token + position."""
        idx = self.check_ids(idx)
        return self.params["tok_emb"][idx] + self.params["pos_emb"][: idx.shape[1]]

    def forward_from_embeddings(self, x):
        """(B, T, C) input embeddings -> (B, T, V) logits, and the caches for `backward`."""
        p, H = self.params, self.config.n_head
        caches = []
        for i in range(self.config.n_layer):
            b = f"blocks.{i}."
            h, ln1 = layers.layer_norm(x, p[b + "ln_1.w"], p[b + "ln_1.b"])
            h, attn = causal_self_attention(
                h, p[b + "attn.qkv.w"], p[b + "attn.qkv.b"], p[b + "attn.proj.w"], p[b + "attn.proj.b"], H
            )
            x = x + h
            h, ln2 = layers.layer_norm(x, p[b + "ln_2.w"], p[b + "ln_2.b"])
            h, fc = layers.linear(h, p[b + "mlp.fc.w"], p[b + "mlp.fc.b"])  # (B, T, 4C)
            h, act = layers.gelu(h)
            h, proj = layers.linear(h, p[b + "mlp.proj.w"], p[b + "mlp.proj.b"])
            x = x + h
            caches.append((ln1, attn, ln2, fc, act, proj))
        h, lnf = layers.layer_norm(x, p["ln_f.w"], p["ln_f.b"])
        logits, head = layers.linear(h, p["lm_head.w"], p["lm_head.b"])
        return logits, (caches, lnf, head)

    def forward(self, idx) -> np.ndarray:
        """(B, T) token ids -> (B, T, V) logits."""
        return self.forward_from_embeddings(self.embed(idx))[0]

    def probs(self, idx) -> np.ndarray:
        """(B, T, V) next-token probabilities."""
        return layers.softmax(self.forward(idx))

    def next_token_probs(self, idx) -> np.ndarray:
        """(B, T) ids -> (B, V) probabilities of the next token; a context longer than
        block_size is cropped to its last block_size tokens."""
        return layers.softmax(self.forward(np.asarray(idx)[:, -self.config.block_size :])[:, -1])

    def loss(self, idx, targets) -> float:
        """Mean cross-entropy of next tokens `targets` (B, T)."""
        idx, targets = self._check_targets(idx, targets)
        logits = self.forward(idx)
        return float(layers.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))[0])

    # --- backward ----------------------------------------------------------------------

    def backward(self, dlogits, cache) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """d loss / d logits (B, T, V) -> (gradients of every parameter but the
        embeddings, d loss / d input embeddings (B, T, C))."""
        caches, lnf, head = cache
        grads = {}
        dh, grads["lm_head.w"], grads["lm_head.b"] = layers.linear_backward(dlogits, head)
        dx, grads["ln_f.w"], grads["ln_f.b"] = layers.layer_norm_backward(dh, lnf)
        for i in reversed(range(self.config.n_layer)):
            b = f"blocks.{i}."
            ln1, attn, ln2, fc, act, proj = caches[i]
            dh, grads[b + "mlp.proj.w"], grads[b + "mlp.proj.b"] = layers.linear_backward(dx, proj)
            dh = layers.gelu_backward(dh, act)
            dh, grads[b + "mlp.fc.w"], grads[b + "mlp.fc.b"] = layers.linear_backward(dh, fc)
            dh, grads[b + "ln_2.w"], grads[b + "ln_2.b"] = layers.layer_norm_backward(dh, ln2)
            dx = dx + dh
            dh, *dattn = causal_self_attention_backward(dx, attn)
            for name, g in zip(("attn.qkv.w", "attn.qkv.b", "attn.proj.w", "attn.proj.b"), dattn):
                grads[b + name] = g
            dh, grads[b + "ln_1.w"], grads[b + "ln_1.b"] = layers.layer_norm_backward(dh, ln1)
            dx = dx + dh
        return grads, dx

    def loss_and_grads(self, idx, targets) -> tuple[float, dict[str, np.ndarray]]:
        """Mean cross-entropy of next tokens `targets` (B, T) and its gradient for every
        parameter."""
        idx, targets = self._check_targets(idx, targets)
        logits, cache = self.forward_from_embeddings(self.embed(idx))
        loss, ce = layers.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        grads, dx = self.backward(layers.cross_entropy_backward(ce).reshape(logits.shape), cache)
        grads["tok_emb"] = layers.embedding_backward(dx, idx, self.config.vocab_size)
        grads["pos_emb"] = np.zeros_like(self.params["pos_emb"])
        grads["pos_emb"][: idx.shape[1]] = dx.sum(axis=0)
        return float(loss), {n: grads[n] for n in self.params}

    def _check_targets(self, idx, targets) -> tuple[np.ndarray, np.ndarray]:
        idx, targets = self.check_ids(idx), self.check_ids(targets)
        if idx.shape != targets.shape:
            raise ValueError(f"targets shape {targets.shape} differs from the inputs' {idx.shape}")
        return idx, targets
