"""kernels_triton.token_logprobs_and_entropy against torch on float64: each row's log-probability
of its target and its entropy, with their backward, on both paths (the `row_path` fixture),
rows at every offset from a 16-byte boundary, and gradcheck in fp64.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from kernels_triton import token_logprobs_and_entropy
from xent_helpers import DEVICE, FAMILY_MARKS, IGNORE, logits_and_targets, odd_rows, placed

pytestmark = FAMILY_MARKS


def token_reference(x, t):
    logp = F.log_softmax(x, -1)
    p = logp.exp()
    ent = -(p * torch.where(p > 0, logp, 0)).sum(-1)
    lp_t = logp.gather(1, t.clamp(min=0)[:, None])[:, 0]
    return torch.where(t == IGNORE, 0, lp_t), ent


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_token_logprobs_and_entropy(row_path, dtype):
    x, t = logits_and_targets(7, 60, dtype)
    x[3, 0] = 0.5  # no NaN row here: torch's entropy gradient of a NaN row is NaN, ours too, and noisy
    x[4] = torch.randn(60, dtype=dtype, device=DEVICE)
    xa = x.clone().requires_grad_()
    logp, ent = token_logprobs_and_entropy(xa, t, ignore_index=IGNORE)
    x64 = x.double().clone().requires_grad_()
    want_logp, want_ent = token_reference(x64, t)
    a, b = (
        torch.randn(7, dtype=torch.float64, device=DEVICE),
        torch.randn(7, dtype=torch.float64, device=DEVICE),
    )
    (logp.double() * a + ent.double() * b).sum().backward()
    finite = torch.isfinite(want_logp)  # row 1's target is -inf: log p = -inf, gradient NaN in torch
    ((want_logp * a)[finite].sum() + (want_ent * b).sum()).backward()
    rel = 1e-12 if dtype == torch.float64 else 2e-6
    torch.testing.assert_close(logp.double(), want_logp, rtol=rel, atol=rel)
    torch.testing.assert_close(ent.double(), want_ent, rtol=rel, atol=rel)
    xa2 = x.clone().requires_grad_()
    lp2, ent2 = token_logprobs_and_entropy(xa2, t, ignore_index=IGNORE)
    (torch.where(finite, lp2.double() * a, 0).sum() + (ent2.double() * b).sum()).backward()
    torch.testing.assert_close(xa2.grad.double(), x64.grad, rtol=rel, atol=rel)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_token_stats_of_rows_off_16_byte_boundaries(row_path, dtype):
    """log p(t), the entropy and their gradient of odd rows (head, body and tail, the extremes
    at the edges) at every offset from a 16-byte boundary, against float64."""
    vec = 16 // torch.empty((), dtype=dtype).element_size()
    x, t = odd_rows(12, 77, dtype)
    x[3:5] = torch.randn(2, 77, dtype=torch.float64).to(dtype)  # no NaN, no +inf: entropies too
    x64 = x.double().requires_grad_()
    want_logp, want_ent = token_reference(x64, t)
    a, b = torch.randn(12, dtype=torch.float64), torch.randn(12, dtype=torch.float64)
    ((want_logp * a).sum() + (want_ent * b).sum()).backward()
    rel = 2e-6 if dtype == torch.float32 else 8e-3
    for off in range(vec):
        xa = placed(x, off, (77, 81)[off % 2]).requires_grad_()
        logp, ent = token_logprobs_and_entropy(xa, t, ignore_index=IGNORE)
        (logp.double() * a + ent.double() * b).sum().backward()
        torch.testing.assert_close(logp.double(), want_logp, rtol=rel, atol=rel)
        torch.testing.assert_close(ent.double(), want_ent, rtol=rel, atol=rel)
        torch.testing.assert_close(xa.grad.double(), x64.grad, rtol=rel, atol=rel)


def test_token_stats_gradcheck_fp64():
    x = torch.randn(2, 9, dtype=torch.float64, device=DEVICE, requires_grad=True)
    t = torch.tensor([1, IGNORE], device=DEVICE)
    assert torch.autograd.gradcheck(lambda v: token_logprobs_and_entropy(v, t), (x,), eps=1e-6, atol=1e-8)
