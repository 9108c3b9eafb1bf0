"""Forward properties of the NumPy MiniGPT: shapes, dtypes, causality, bad input."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from minigpt_np import layers
from minigpt_np.model import GPTConfig, MiniGPT, check_params, init_params, param_shapes
from np_helpers import SMALL, perturbed_model


@given(B=st.integers(1, 5), T=st.integers(1, SMALL.block_size), seed=st.integers(0, 2**31 - 1),
       dtype=st.sampled_from([np.float32, np.float64]))  # fmt: skip
def test_forward_shapes_dtypes_and_probabilities(B, T, seed, dtype):
    model = perturbed_model(SMALL, seed, dtype)
    idx = np.random.default_rng(seed).integers(0, SMALL.vocab_size, (B, T))
    logits = model.forward(idx)
    assert logits.shape == (B, T, SMALL.vocab_size) and logits.dtype == dtype
    assert np.isfinite(logits).all()
    probs = model.probs(idx)
    assert probs.dtype == dtype and (probs >= 0).all()
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-5 if dtype == np.float32 else 1e-12)


@given(seed=st.integers(0, 2**31 - 1), t=st.integers(0, SMALL.block_size - 2))
def test_forward_is_causal(seed, t):
    """Changing token t+1.. changes nothing at positions <= t; changing token t changes
    position t."""
    model = perturbed_model(SMALL, seed)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, SMALL.vocab_size, (2, SMALL.block_size))
    other = idx.copy()
    shift = 1 + rng.integers(0, SMALL.vocab_size - 1, idx[:, t + 1 :].shape)  # never 0 mod V
    other[:, t + 1 :] = (idx[:, t + 1 :] + shift) % SMALL.vocab_size
    a, b = model.forward(idx), model.forward(other)
    np.testing.assert_array_equal(a[:, : t + 1], b[:, : t + 1])
    assert not np.allclose(a[:, t + 1], b[:, t + 1])


def test_batch_rows_are_independent():
    model = perturbed_model(SMALL, 3)
    idx = np.random.default_rng(3).integers(0, SMALL.vocab_size, (4, 9))
    batched = model.forward(idx)
    for b in range(4):
        np.testing.assert_allclose(batched[b], model.forward(idx[b : b + 1])[0], rtol=1e-12, atol=1e-12)


def test_float32_and_float64_agree():
    m64 = perturbed_model(SMALL, 4)
    idx = np.random.default_rng(4).integers(0, SMALL.vocab_size, (3, SMALL.block_size))
    np.testing.assert_allclose(m64.astype(np.float32).forward(idx), m64.forward(idx), atol=1e-4, rtol=1e-4)


def test_layer_norm_and_gelu_formulas():
    """The two formulas the torch port must reproduce exactly, on fresh inputs."""
    rng = np.random.default_rng()
    x = rng.standard_normal((5, 16)) * 3 + 1
    w, b = rng.standard_normal(16), rng.standard_normal(16)
    y, _ = layers.layer_norm(x, w, b)
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12)
    g, _ = layers.gelu(x)
    ref = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(g, ref, rtol=1e-12, atol=1e-12)


def test_card_size_parameter_count():
    """L = 4, H = 4, d = 64, d_h = 16, V = 616: about 280k parameters."""
    cfg = GPTConfig()
    assert (cfg.n_layer, cfg.n_head, cfg.n_embd, cfg.head_size) == (4, 4, 64, 16)
    n = sum(int(np.prod(s)) for s in param_shapes(cfg).values())
    assert n == 616 * 64 * 2 + 616 + 32 * 64 + 4 * (12 * 64 * 64 + 13 * 64) + 2 * 64
    assert param_shapes(cfg)["blocks.0.attn.qkv.w"] == (192, 64)  # (out, in), like nn.Linear


@pytest.mark.parametrize("idx, err, match", [
    (np.zeros((2, 3), dtype=np.float32), TypeError, "integers"),
    (np.zeros(3, dtype=np.int64), ValueError, r"\(B, T\)"),
    (np.zeros((2, 0), dtype=np.int64), ValueError, "non-empty"),
    (np.zeros((1, SMALL.block_size + 1), dtype=np.int64), ValueError, "block_size"),
    (np.full((1, 2), SMALL.vocab_size), ValueError, r"\[0, 37\)"),
    (np.full((1, 2), -1), ValueError, r"\[0, 37\)"),
])  # fmt: skip
def test_bad_token_ids_are_clear_errors(idx, err, match):
    with pytest.raises(err, match=match):
        perturbed_model(SMALL, 0).forward(idx)


def test_targets_must_match_inputs():
    model = perturbed_model(SMALL, 0)
    with pytest.raises(ValueError, match="targets shape"):
        model.loss_and_grads(np.zeros((2, 3), np.int64), np.zeros((2, 4), np.int64))


def test_parameters_are_checked_against_the_config():
    params = init_params(SMALL, 0)
    check_params(SMALL, params)
    with pytest.raises(ValueError, match="missing.*ln_f.b"):
        MiniGPT(SMALL, {k: v for k, v in params.items() if k != "ln_f.b"})
    with pytest.raises(ValueError, match="unexpected.*'extra'"):
        MiniGPT(SMALL, {**params, "extra": np.zeros(3, np.float32)})
    with pytest.raises(ValueError, match="shapes"):
        MiniGPT(SMALL, {**params, "lm_head.w": params["lm_head.w"].T})
    with pytest.raises(ValueError, match="float32 or all float64"):
        MiniGPT(SMALL, {**params, "lm_head.b": params["lm_head.b"].astype(np.float64)})
    with pytest.raises(ValueError, match="multiple of n_head"):
        GPTConfig(n_embd=30, n_head=4)
