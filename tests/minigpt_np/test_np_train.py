"""AdamW, clipping, the schedule, and short training runs."""

import math

import numpy as np
import pytest
from minigpt_np.corpus import consecutive_windows, random_windows
from minigpt_np.optim import AdamW, AdamWConfig, clip_grad_norm, decays, lr_at
from minigpt_np.train import TrainConfig, train

TINY = dict(n_train_sentences=3000, n_val_sentences=100, block_size=16, batch_size=16, eval_every=40)


def test_adamw_first_step_is_lr_times_sign_plus_decay():
    """At step 1 bias correction makes m_hat / sqrt(v_hat) = g / |g|, so each parameter
    moves by lr * g / (|g| + eps), after decoupled decay on the decayed tensors only."""
    rng = np.random.default_rng()
    params = {
        "a.w": rng.standard_normal((3, 4)),
        "a.b": rng.standard_normal(3),
        "tok_emb": rng.standard_normal((5, 4)),
    }
    grads = {n: rng.standard_normal(p.shape) for n, p in params.items()}
    before = {n: p.copy() for n, p in params.items()}
    cfg = AdamWConfig(lr=0.01, weight_decay=0.5)
    AdamW(params, cfg).step(grads)
    for n, p in params.items():
        shrink = 1 - cfg.lr * cfg.weight_decay if decays(n, p.shape) else 1.0
        step = cfg.lr * grads[n] / (np.abs(grads[n]) + cfg.eps)
        np.testing.assert_allclose(p, before[n] * shrink - step, rtol=1e-12, atol=1e-15)
    assert [n for n in params if decays(n, params[n].shape)] == ["a.w"]


def test_adamw_bias_correction_over_steps():
    """A constant gradient keeps m / sqrt(v) = sign(g) at every step (both corrections
    exact), so without decay the parameter moves lr per step."""
    p = {"x.b": np.array([1.0, -2.0])}
    opt = AdamW(p, AdamWConfig(lr=0.1, weight_decay=0.0, eps=0.0))
    for _ in range(5):
        opt.step({"x.b": np.array([3.0, -0.5])})
    np.testing.assert_allclose(p["x.b"], [1.0 - 0.5, -2.0 + 0.5], rtol=1e-12)


def test_clip_grad_norm():
    rng = np.random.default_rng()
    grads = {"a": rng.standard_normal(10) * 10, "b": rng.standard_normal((3, 3)) * 10}
    norm = math.sqrt(sum(float((g**2).sum()) for g in grads.values()))
    assert clip_grad_norm(grads, 1.0) == pytest.approx(norm)
    assert math.sqrt(sum(float((g**2).sum()) for g in grads.values())) == pytest.approx(1.0, rel=1e-5)
    small = {"a": np.full(4, 0.1)}
    clip_grad_norm(small, 1.0)
    np.testing.assert_array_equal(small["a"], np.full(4, 0.1))


def test_lr_schedule_warms_up_then_decays_to_min():
    kw = dict(max_lr=1.0, min_lr=0.1, warmup_steps=10, total_steps=100)
    lrs = [lr_at(s, **kw) for s in range(120)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert all(a < b for a, b in zip(lrs[:9], lrs[1:10]))
    assert all(a >= b for a, b in zip(lrs[10:100], lrs[11:101]))
    assert lrs[55] == pytest.approx(0.55) and lrs[100] == lrs[119] == 0.1


def test_windows_are_next_token_pairs():
    stream = np.arange(100)
    x, y = random_windows(stream, 8, 10, np.random.default_rng(0))
    assert x.shape == y.shape == (8, 10)
    np.testing.assert_array_equal(y, x + 1)
    x, y = consecutive_windows(stream, 10)
    assert x.shape == (9, 10) and x[1, 0] == 10
    np.testing.assert_array_equal(y, x + 1)
    with pytest.raises(ValueError, match="too short"):
        random_windows(stream[:5], 2, 10, np.random.default_rng(0))


def test_short_training_run_lowers_the_loss_clearly():
    result = train(TrainConfig(steps=80, lr=3e-3, warmup_steps=10, **TINY), progress=None)
    start, end = np.mean(result.losses[:5]), np.mean(result.losses[-5:])
    assert start > math.log(result.model.config.vocab_size) - 0.5  # starts near uniform
    assert end < start - 2.0, (start, end)
    assert result.val_losses[80] < start - 2.0
    assert result.tokens_per_s > 0


def test_training_is_deterministic_for_a_seed():
    a = train(TrainConfig(steps=6, **TINY), progress=None)
    b = train(TrainConfig(steps=6, **TINY), progress=None)
    c = train(TrainConfig(steps=6, seed=7, **TINY), progress=None)
    assert a.losses == b.losses
    for n in a.model.params:
        np.testing.assert_array_equal(a.model.params[n], b.model.params[n])
    assert a.losses != c.losses
