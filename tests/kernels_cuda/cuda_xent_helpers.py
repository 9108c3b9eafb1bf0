"""Inputs and checks shared by the kernels_cuda cross-entropy tests: the dtypes, random logits with
ignored targets, rows placed at an offset from a 16-byte boundary, our loss and gradient
(NaN-poisoned outputs), F.cross_entropy's in float64, and the comparison between them."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from kernels_cuda import arrays
from kernels_cuda import cross_entropy_op as ce
from labtools.ops import tolerance

DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
}


def _close(got, ref, dtype: str, what: str) -> None:
    """got against a float64 reference: same NaN and infinity positions, the rest within the
    dtype's stated tolerance."""
    got, ref = got.detach().double().cpu(), ref.detach().double().cpu()
    assert torch.equal(got.isnan(), ref.isnan()), (
        f"{what}: NaN positions differ ({int(got.isnan().sum())} vs {int(ref.isnan().sum())})"
    )
    inf = ref.isinf()
    assert torch.equal(got[inf], ref[inf]), f"{what}: infinities differ"
    fin = ~(ref.isnan() | inf)
    tol = tolerance(dtype)
    err = (got[fin] - ref[fin]).abs()
    bound = tol["atol"] + tol["rtol"] * ref[fin].abs()
    assert bool((err <= bound).all()), f"{what}: max error {float(err.max()):.3g}; tolerance {tol}"


def _inputs(M, V, dtype, seed, ignored=0.2, scale=3.0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(M, V, generator=g, dtype=torch.float64) * scale).to(DTYPES[dtype])
    t = torch.randint(0, V, (M,), generator=g)
    t[torch.rand(M, generator=g) < ignored] = -100
    return x.cuda(), t.cuda()


def _reference(x, t, **kw):
    """F.cross_entropy in float64 on the CPU, and the logits' gradient (of loss.sum() for 'none')."""
    x64 = x.detach().double().cpu().requires_grad_()
    loss = F.cross_entropy(x64, t.cpu(), **kw)
    (grad,) = torch.autograd.grad(loss.sum(), x64)
    return loss.detach(), grad


def _ours(x, t, keep_address=False, **kw):
    """Our loss and gradient (NaN-poisoned outputs), on a copy of x, or on x itself (its rows at
    their addresses) with keep_address."""
    x = (x.detach() if keep_address else x.detach().clone()).requires_grad_()
    with arrays.poison_outputs():
        loss = ce.cross_entropy(x, t, **kw)
        (grad,) = torch.autograd.grad(loss.sum(), x)
    return loss, grad


def _at_offset(M, V, dtype, offset, seed, stride=None):
    """(M, V) logits whose first row starts `offset` elements past a 16-byte boundary, rows
    `stride` (default V) apart, and their targets; the rest of the buffer NaN."""
    x, t = _inputs(M, V, dtype, seed=seed)
    stride = stride or V
    buf = torch.full((offset + M * stride + V,), math.nan, dtype=x.dtype, device=x.device)
    view = buf[offset:].as_strided((M, V), (stride, 1))
    view.copy_(x)
    assert view.data_ptr() % 16 == offset * x.element_size()
    return view, t
