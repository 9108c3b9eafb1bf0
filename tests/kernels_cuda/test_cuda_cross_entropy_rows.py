"""kernels_cuda.cross_entropy's rows and plans on a GPU (cuda/09_cross_entropy.cu), against
F.cross_entropy in float64.

GPU (marked `gpu`): rows of odd length at every offset mod 16 bytes, with the gradient's rows lined
up with them or not, in every dtype (token log-probabilities and entropy too); inplace_backward at
an odd offset; every plan of the ladder at its capacity and one pack past it; 65539 rows of 600;
rows kept in shared memory in full, in part or not at all give the same bits.
Run: scripts/test-in-place tests/kernels_cuda/test_cuda_cross_entropy_rows.py -m gpu
"""

from __future__ import annotations

import pytest
import torch
from cuda_xent_helpers import DTYPES, _at_offset, _close, _inputs, _ours, _reference
from kernels_cuda import cross_entropy_op as ce
from kernels_cuda import log_softmax_op as ls
from kernels_cuda import row_kernels as rk


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("V", [5, 13, 601, 4099, 50257])
def test_rows_at_every_offset_mod_16_match_float64_reference(dtype, V):
    """Rows of odd length start at every element offset mod 16 bytes (head, packs, tail); the
    gradient lines up with them (16-byte stores) and, for rows of a stride other than V, does not
    (element stores)."""
    vec = 16 // rk.ITEMSIZE[dtype]
    M = 11 if V < 10_000 else 5
    for offset in range(vec):
        for stride in (None, V + 3):
            x, t = _at_offset(M, V, dtype, offset, seed=100 * V + offset, stride=stride)
            for reduction, eps in (("sum", 0.1), ("none", 0.0), ("mean", 0.0)):
                loss, grad = _ours(x, t, keep_address=True, reduction=reduction, label_smoothing=eps)
                ref_loss, ref_grad = _reference(x, t, reduction=reduction, label_smoothing=eps)
                what = f"{M}x{V} at offset {offset}, stride {stride or V}, {reduction}"
                _close(loss, ref_loss, dtype, f"loss {what}")
                top = ref_grad.abs().max()
                _close(grad / top, ref_grad / top, dtype, f"gradient {what}")
            acc = "float64" if dtype == "float64" else "float32"
            lp, h = ce.token_logprobs_and_entropy(x, t)
            logp = torch.log_softmax(x.double().cpu(), -1)
            keep = t.cpu() != -100
            _close(h, -(logp.exp() * logp).sum(-1), acc, f"entropy {what}")
            _close(
                lp,
                torch.where(keep, logp.gather(1, t.cpu().clamp(min=0)[:, None])[:, 0], 0.0),
                acc,
                f"logprob {what}",
            )


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_inplace_backward_at_an_odd_offset(dtype):
    x, t = _at_offset(6, 50257, dtype, 3, seed=21)
    _, fresh = _ours(x, t, keep_address=True)
    xi = _at_offset(6, 50257, dtype, 3, seed=21)[0].detach().requires_grad_()  # the same address mod 16
    (g,) = torch.autograd.grad(ce.cross_entropy(xi, t, inplace_backward=True), xi)
    _, ref = _reference(x, t)
    _close(g / ref.abs().max(), ref / ref.abs().max(), dtype, "inplace gradient at offset 3")
    assert torch.equal(g, fresh), "inplace_backward changed the gradient"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_every_plan_of_the_ladder_matches_float64_reference(dtype):
    """Rows at each plan's capacity and one pack past it (the next plan), many rows of the short
    ones (the last row group of a block part empty)."""
    vec = 16 // rk.ITEMSIZE[dtype]
    Ns = sorted(
        {
            n
            for c in rk.every_xent_config(dtype)
            if not c.steps
            for n in (c.capacity() * vec, c.capacity() * vec + vec + 1)
        }
    )
    for N in Ns:
        M = 1001 if N <= 4096 else 7
        x, t = _inputs(M, N, dtype, seed=N)
        loss, grad = _ours(x, t, reduction="sum", label_smoothing=0.1)
        ref_loss, ref_grad = _reference(x, t, reduction="sum", label_smoothing=0.1)
        _close(loss / M, ref_loss / M, dtype, f"loss {M}x{N} ({rk.xent_config(N, dtype)})")
        top = ref_grad.abs().max()
        _close(grad / top, ref_grad / top, dtype, f"gradient {M}x{N} ({rk.xent_config(N, dtype)})")


@pytest.mark.gpu
def test_many_short_rows_float32():
    x, t = _inputs(65536 + 3, 600, "float32", seed=22)
    loss, grad = _ours(x, t, reduction="none")
    ref_loss, ref_grad = _reference(x, t, reduction="none")
    _close(loss, ref_loss, "float32", "loss 65539x600")
    _close(grad, ref_grad, "float32", "gradient 65539x600")


@pytest.mark.gpu
@pytest.mark.parametrize("limit", [0, 4096])
def test_where_the_row_is_kept_changes_no_bit(limit):
    """Rows kept in shared memory in full, in part (re-read from L2) or not at all: the same bits."""
    x, t = _inputs(6, 50257, "bfloat16", seed=17)
    loss, grad = _ours(x, t, label_smoothing=0.1)
    y = ls.log_softmax(x)
    before = rk.STAGE_LIMIT
    rk.set_stage_limit(limit)
    try:
        loss_l, grad_l = _ours(x, t, label_smoothing=0.1)
        y_l = ls.log_softmax(x)
    finally:
        rk.set_stage_limit(before)
    assert torch.equal(loss, loss_l) and torch.equal(grad, grad_l), f"stage limit {limit} changed the result"
    assert torch.equal(y, y_l), f"stage limit {limit} changed log_softmax"
