"""The hand-written backward against central finite differences, in float64.

Full per-element finite differences over ~300k parameters would take minutes, so for
every parameter tensor (and for the input embeddings) the test checks

- a random directional derivative: L(θ + εv) and L(θ - εv) against <g, v> for a random
  unit vector v over the whole tensor, and
- a few random single elements (v a unit vector along one element),

each to a relative error of 1e-6. The difference quotient is the fourth-order central
one, (-L(θ+2εv) + 8L(θ+εv) - 8L(θ-εv) + L(θ-2εv)) / 12ε with ε = 1e-3: its truncation
error (~ε^4) and rounding error (~1e-16 |L| / ε) both stay near 1e-10, where the
second-order quotient cannot get below ~1e-7 for the small derivatives of a 300k-parameter
model.

Relative error is |fd - g| / max(|fd|, |g|, scale), where scale is the size such a
derivative typically has: ||g|| / sqrt(n) for a random unit direction, the tensor's RMS
gradient for one element. The scale only matters for derivatives that are (nearly)
zero -- e.g. the key bias, whose gradient is exactly 0 because adding a constant to every
score of a softmax row changes nothing -- where it keeps rounding noise from reading
as a relative error of 1.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from minigpt_np import layers
from minigpt_np.model import GPTConfig
from np_helpers import SMALL, perturbed_model

EPS = 1e-3
RTOL = 1e-6
N_ELEMENTS = 3


def rel_err(fd: float, an: float, floor: float) -> float:
    return abs(fd - an) / max(abs(fd), abs(an), floor)


def check_tensor(
    loss_fn,
    x: np.ndarray,
    grad: np.ndarray,
    rng,
    touched: np.ndarray | None = None,
    n_elements: int = N_ELEMENTS,
) -> list[str]:
    """Directional + single-element checks of d loss_fn / d x (x is perturbed in place
    and restored). `touched` marks the elements the loss depends on (default: all)."""
    failures = []

    def fd_along(v):
        def at(s):
            x[...] += s * EPS * v
            out = loss_fn()
            x[...] -= s * EPS * v
            return out

        return (-at(2) + 8 * at(1) - 8 * at(-1) + at(-2)) / (12 * EPS)

    v = rng.standard_normal(x.shape)
    v /= np.linalg.norm(v)
    err = rel_err(fd_along(v), float(np.sum(grad * v)), np.linalg.norm(grad) / np.sqrt(x.size))
    if not err <= RTOL:
        failures.append(f"direction: rel err {err:.2e}")

    candidates = np.flatnonzero(np.ones(x.shape, bool) if touched is None else touched)
    rms = np.sqrt(np.mean(grad.reshape(-1)[candidates] ** 2))
    for flat in rng.choice(candidates, size=min(n_elements, len(candidates)), replace=False):
        e = np.zeros(x.shape)
        e.reshape(-1)[flat] = 1.0
        err = rel_err(fd_along(e), float(grad.reshape(-1)[flat]), rms)
        if not err <= RTOL:
            failures.append(f"element {np.unravel_index(flat, x.shape)}: rel err {err:.2e}")
    return failures


def check_model(config: GPTConfig, B: int, T: int, seed: int, n_elements: int = N_ELEMENTS) -> None:
    model = perturbed_model(config, seed)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, config.vocab_size, (B, T))
    targets = rng.integers(0, config.vocab_size, (B, T))
    _, grads = model.loss_and_grads(idx, targets)
    assert set(grads) == set(model.params)

    failures = {}
    for name, p in model.params.items():
        touched = None
        if name == "tok_emb":
            touched = np.zeros(p.shape, bool)
            touched[np.unique(idx)] = True
        elif name == "pos_emb":
            touched = np.zeros(p.shape, bool)
            touched[:T] = True
        f = check_tensor(lambda: model.loss(idx, targets), p, grads[name], rng, touched, n_elements)
        if f:
            failures[name] = f

    # The input embeddings x0 = tok_emb[idx] + pos_emb[:T].
    x0 = model.embed(idx)
    logits, cache = model.forward_from_embeddings(x0)

    def loss_x0():
        out = model.forward_from_embeddings(x0)[0]
        return float(layers.cross_entropy(out.reshape(-1, out.shape[-1]), targets.reshape(-1))[0])

    _, ce = layers.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    _, dx0 = model.backward(layers.cross_entropy_backward(ce).reshape(logits.shape), cache)
    f = check_tensor(loss_x0, x0, dx0, rng, n_elements=n_elements)
    if f:
        failures["input embeddings"] = f
    assert not failures, failures


@given(B=st.integers(1, 4), T=st.integers(1, SMALL.block_size), seed=st.integers(0, 2**31 - 1))
def test_gradients_match_finite_differences(B, T, seed):
    check_model(SMALL, B, T, seed)


def test_gradients_match_finite_differences_at_the_card_size():
    """The shipped architecture: L = 4, H = 4, d = 64, V = 616, one full context (one
    element per tensor besides the direction: each loss here costs 10x the small one)."""
    check_model(
        GPTConfig(vocab_size=616, block_size=32, n_layer=4, n_head=4, n_embd=64),
        B=1,
        T=32,
        seed=11,
        n_elements=1,
    )


def test_the_check_catches_a_wrong_gradient():
    """The same check, fed a gradient that is off by 1e-4 relative in one tensor, fails."""
    model = perturbed_model(SMALL, 5)
    rng = np.random.default_rng(5)
    idx, targets = rng.integers(0, SMALL.vocab_size, (2, 6)), rng.integers(0, SMALL.vocab_size, (2, 6))
    _, grads = model.loss_and_grads(idx, targets)
    name = "blocks.1.ln_2.b"
    wrong = grads[name] * (1 + 1e-4)
    assert check_tensor(lambda: model.loss(idx, targets), model.params[name], wrong, rng)
    assert not check_tensor(lambda: model.loss(idx, targets), model.params[name], grads[name], rng)


@pytest.mark.parametrize("T", [1, 7])
def test_gradients_are_float32_for_a_float32_model(T):
    model = perturbed_model(SMALL, 2, dtype=np.float32)
    idx = np.random.default_rng(2).integers(0, SMALL.vocab_size, (3, T))
    loss, grads = model.loss_and_grads(idx, idx)
    assert np.isfinite(loss)
    assert all(g.dtype == np.float32 and g.shape == model.params[n].shape for n, g in grads.items())
