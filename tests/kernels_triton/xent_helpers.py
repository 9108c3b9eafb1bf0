"""Inputs and checks shared by the Triton cross-entropy and token-statistics tests: logits with
the special rows, rows laid out at a chosen offset from a 16-byte boundary, and the comparison
with torch on float64."""

from __future__ import annotations

import importlib

import pytest
import torch
import torch.nn.functional as F
from kernels_triton import cross_entropy
from triton_helpers import DEVICE

IGNORE = -100

# Every output comes from NaN-filled memory (conftest's poisoned_empty), so an element a kernel
# does not write fails; the rows fed on purpose (NaN, +-inf, huge) make numpy warn under the
# interpreter, as do its masked-off lanes.
FAMILY_MARKS = [
    pytest.mark.usefixtures("poisoned_empty"),
    pytest.mark.filterwarnings(
        "ignore:invalid value encountered:RuntimeWarning",
        "ignore:divide by zero:RuntimeWarning",
        "ignore:overflow encountered:RuntimeWarning",
    ),
]


def logits_and_targets(m: int, v: int, dtype, seed: int = 0, special: bool = True):
    """Normal logits with, when `special`, a -inf entry, a target at -inf, a row near 1e4, a
    NaN row, a row of only -inf, and an ignored target."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, v, generator=g, dtype=torch.float64) * 3
    t = torch.randint(0, v, (m,), generator=g)
    if special:
        x[0, (t[0] + 1) % v] = float("-inf")
        x[1, t[1]] = float("-inf")
        x[2] += 1e4
        x[3, 0] = float("nan")
        x[4] = float("-inf")
        t[5] = IGNORE
    return x.to(dtype).to(DEVICE), t.to(DEVICE)


def placed(x: torch.Tensor, off: int, stride: int | None = None) -> torch.Tensor:
    """x copied into a fresh buffer, its rows `stride` elements apart (default: unpadded), the
    first starting `off` elements past a 16-byte boundary: the layout sets each row's offset."""
    m, v = x.shape
    stride = v if stride is None else stride
    size = x.element_size()
    buf = torch.zeros(m * stride + 32 // size, dtype=x.dtype, device=x.device)
    start = (-(buf.data_ptr() // size)) % (16 // size) + off
    view = buf[start:].as_strided((m, v), (stride, 1))
    view.copy_(x)
    assert view.data_ptr() % 16 == off * size
    return view


def check(x, t, reduction, eps, dloss_scale=1.7, layout=None):
    """Loss and gradient against torch's on float64: within the dtype's rounding of the
    result, or no further off than torch's own result in that dtype (twice). layout: x's
    values in the layout the op sees (placed), else a contiguous copy."""
    kw = dict(reduction=reduction, label_smoothing=eps, ignore_index=IGNORE)
    xa = (x.clone() if layout is None else layout(x)).requires_grad_()
    loss = cross_entropy(xa, t, **kw)
    x64 = x.double().clone().requires_grad_()
    want = F.cross_entropy(x64, t, **kw)
    xt = x.clone().requires_grad_()
    theirs = F.cross_entropy(xt, t, **kw)
    assert loss.dtype == x.dtype and loss.shape == want.shape
    dloss = torch.randn(want.shape, dtype=torch.float64, device=DEVICE) if reduction == "none" else None
    dloss = torch.tensor(dloss_scale, dtype=torch.float64, device=DEVICE) if dloss is None else dloss
    loss.backward(dloss.to(x.dtype))
    want.backward(dloss)
    theirs.backward(dloss.to(x.dtype))
    rel = {torch.float64: 1e-12, torch.float32: 2e-6, torch.bfloat16: 8e-3}[x.dtype]
    for got, ref, their in ((loss, want, theirs), (xa.grad, x64.grad, xt.grad)):
        assert torch.equal(got.isnan(), ref.isnan()), (got, ref)
        err = (got.double() - ref).abs().nan_to_num(0)
        their_err = (their.double() - ref).abs().nan_to_num(0)
        size = ref.abs().nan_to_num(0, 0, 0)
        scale = size.amax(-1, keepdim=True) if size.dim() else size  # a row's gradient: its largest entry
        bound = torch.maximum(rel * (size + scale + 1e-7), 2 * their_err)
        assert not (err > bound).any(), f"worst {err.max().item()}, torch's {their_err.max().item()}"


def odd_rows(m: int, v: int, dtype, seed: int = 0):
    """Rows of v logits whose extremes sit where a split puts its head (the first columns) or
    its tail (the last): the max, -inf, +inf, NaN, the target, huge logits; and ignored targets."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, v, generator=g, dtype=torch.float64) * 3
    t = torch.randint(0, v, (m,), generator=g)
    x[0, 1] = 40.0  # the max in the head
    x[1, v - 2] = 40.0  # the max in the tail
    x[2, :3] = float("-inf")  # -inf in the head and the tail, the target in the tail
    x[2, v - 3 :] = float("-inf")
    t[2] = v - 4
    x[3, v - 1] = float("nan")
    x[4, 0] = float("inf")
    x[5] += 1e4  # huge, the max in the tail and the target in the head
    x[5, v - 1] += 9.0
    t[5] = 1
    x[6, : v - 2] = float("-inf")  # only the last two columns are not -inf, the target one of them
    t[6] = v - 1
    t[7] = 0
    t[8] = IGNORE
    x[9, 2] = x[9].max() + 0.5  # the max in the head and the target (p - 1 not cancelling to ~0)
    t[9] = 2
    t[10] = v - 1
    return x.to(dtype).to(DEVICE), t.to(DEVICE)


def check_every_offset(x, t, v: int, vec: int) -> None:
    """check() with the rows' base at every offset from a 16-byte boundary: unpadded, padded to
    whole packs, or padded to an odd stride (the gradient then laid out unlike the logits), by
    a reduction that writes the gradient in the forward and by one that recomputes it."""
    padded = -(-v // vec) * vec
    for off in range(vec):
        stride = (v, padded, padded + 1)[off % 3]
        reduction, eps = (("none", 0.1), ("mean", 0.1))[off % 2]
        check(x, t, reduction, eps, layout=lambda x, off=off, stride=stride: placed(x, off, stride))


def launched_kernels(monkeypatch) -> list:
    """The kernels cross_entropy.py launches from here on, in order."""
    module = importlib.import_module("kernels_triton.cross_entropy")
    seen, launch = [], module.launch
    monkeypatch.setattr(
        module, "launch", lambda kernel, *a, **kw: (seen.append(kernel), launch(kernel, *a, **kw))[1]
    )
    return seen


def assert_forward_gradient_is_the_recompute(x, t) -> None:
    """The gradient the forward writes (the summed loss, upstream gradient 1) is, bit for bit,
    the backward kernel's recompute from the forward's statistics."""
    module = importlib.import_module("kernels_triton.cross_entropy")
    xa = x.clone().requires_grad_()
    cross_entropy(xa, t, reduction="sum").backward()
    _, stats, count = module._forward(x, t, IGNORE, "sum", 0.0, None)
    one = torch.ones((), dtype=torch.float32, device=DEVICE)
    assert torch.equal(module._backward(x, t, stats, count, one, IGNORE, "sum", 0.0), xa.grad)
