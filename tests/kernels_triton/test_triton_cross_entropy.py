"""kernels_triton.cross_entropy against F.cross_entropy on float64: the loss and its gradient,
every reduction, label smoothing, ignored targets, in-place backward, autograd and torch.compile.

Without a GPU these run under Triton's interpreter on small vocabularies, on both paths (row
held whole; looped, forced by shrinking xent_launch.ROW_SHAPES: the `row_path` fixture).
Outputs come from NaN-poisoned memory (torch.empty patched). The `gpu` tests run GPT-2's and
Llama 3's vocabularies in bf16 and fp32, and check the memory the op holds. Row layouts and
which kernel takes a row: test_triton_cross_entropy_rows.py; the compiled code:
test_triton_cross_entropy_sass.py.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from kernels_triton import cross_entropy
from kernels_triton import xent_reduce as R
from kernels_triton.cross_entropy import _count
from xent_helpers import DEVICE, FAMILY_MARKS, IGNORE, check, logits_and_targets, placed

pytestmark = FAMILY_MARKS


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_loss_and_gradient_match_float64(row_path, dtype, eps, reduction):
    x, t = logits_and_targets(8, 70, dtype)
    check(x, t, reduction, eps)
    x, t = logits_and_targets(6, 70, dtype, seed=1, special=False)  # finite: the mean and sum are too
    check(x, t, reduction, eps)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_float64_to_the_last_bits(row_path, reduction):
    x, t = logits_and_targets(6, 50, torch.float64, special=False)
    t[2] = IGNORE
    check(x, t, reduction, 0.25)


def test_upstream_gradient_of_one_and_a_second_backward(row_path):
    """loss.backward() (upstream 1: the in-place scaling is skipped on the device), and a
    second backward through a retained graph (recomputed from the saved statistics)."""
    x, t = logits_and_targets(5, 40, torch.float64, special=False)
    xa = x.clone().requires_grad_()
    loss = cross_entropy(xa, t)
    loss.backward(retain_graph=True)
    first = xa.grad.clone()
    loss.backward(torch.tensor(3.0, dtype=torch.float64, device=DEVICE))
    x64 = x.clone().requires_grad_()
    (want,) = torch.autograd.grad(F.cross_entropy(x64, t), x64)
    torch.testing.assert_close(first, want, rtol=1e-12, atol=1e-15)
    torch.testing.assert_close(xa.grad, 4 * want, rtol=1e-12, atol=1e-15)


def test_every_target_ignored():
    x, _ = logits_and_targets(4, 30, torch.float32, special=False)
    t = torch.full((4,), IGNORE, device=DEVICE)
    for reduction, want in (("mean", float("nan")), ("sum", 0.0)):
        xa = x.clone().requires_grad_()
        loss = cross_entropy(xa, t, reduction=reduction, label_smoothing=0.1)
        torch.testing.assert_close(loss, torch.tensor(want, device=DEVICE), equal_nan=True)
        loss.backward()
        assert torch.equal(xa.grad, torch.zeros_like(x))
    assert torch.equal(cross_entropy(x, t, reduction="none"), torch.zeros(4, device=DEVICE))


def test_count_and_loss_summed_over_chunks(row_path):
    """xent_reduce splits the M rows into PARTS chunks (cdiv(M, PARTS) rows each, the last one
    short): the counts by chunk, one chunk all ignored, and the mean and sum over every chunk
    match torch's, in the forward's gradient and in a second backward (the recompute);
    every target ignored gives a NaN mean."""
    parts, size = R.PARTS.value, 7
    x, t = logits_and_targets(parts * size - 3, 11, torch.float32, special=False)
    t[::3] = IGNORE
    t[size : 2 * size] = IGNORE
    count = _count(t, IGNORE, True)
    assert count[:parts].tolist() == [int((c != IGNORE).sum()) for c in t.split(size)], count
    for reduction in ("mean", "sum"):
        check(x, t, reduction, 0.1)
    xa = x.clone().requires_grad_()
    loss = cross_entropy(xa, t)
    loss.backward(retain_graph=True)
    first = xa.grad.clone()
    loss.backward()
    assert torch.equal(xa.grad, 2 * first)
    t[:] = IGNORE
    assert cross_entropy(x, t).isnan() and cross_entropy(x, t, reduction="sum") == 0


def test_inplace_backward_writes_the_gradient_over_the_logits(row_path):
    x, t = logits_and_targets(5, 40, torch.float32, special=False)
    x64 = x.double().requires_grad_()
    want = F.cross_entropy(x64, t, label_smoothing=0.1)
    want.backward()
    xa = x.clone().requires_grad_()
    loss = cross_entropy(xa, t, label_smoothing=0.1, inplace_backward=True)
    torch.testing.assert_close(loss.double(), want.detach(), rtol=2e-6, atol=1e-7)
    torch.testing.assert_close(xa.detach().double(), x64.grad, rtol=2e-6, atol=1e-8)  # overwritten
    loss.backward()
    torch.testing.assert_close(xa.grad.double(), x64.grad, rtol=2e-6, atol=1e-8)


def test_inplace_backward_over_strided_logits_with_an_upstream_gradient(row_path):
    """Logits that are every other row of a buffer: the gradient lands in those rows, scaled."""
    x, t = logits_and_targets(5, 40, torch.float32, special=False)
    buffer = torch.zeros(10, 40, device=DEVICE)
    buffer[::2] = x
    leaf = buffer.clone().requires_grad_()
    view = leaf[::2]
    grad_out = []
    view.register_hook(lambda g: grad_out.append(g))
    (cross_entropy(view, t, inplace_backward=True) * 2.5).backward()
    x64 = x.double().requires_grad_()
    (F.cross_entropy(x64, t) * 2.5).backward()
    torch.testing.assert_close(grad_out[0].double(), x64.grad, rtol=2e-6, atol=1e-8)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_gradcheck_fp64(reduction):
    x = torch.randn(3, 7, dtype=torch.float64, device=DEVICE, requires_grad=True)
    t = torch.tensor([3, IGNORE, 6], device=DEVICE)
    fn = lambda v: cross_entropy(v, t, reduction=reduction, label_smoothing=0.2)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-8)


@pytest.mark.parametrize("v", [90, 93])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_batch_invariant(row_path, dtype, v):
    """A row's loss and gradient are the same bits alone as in a batch that puts it at the
    same offset from a 16-byte boundary (rows of 90 or 93 are not whole 16-byte packs: the
    looped kernels split them by that offset)."""
    x, t = logits_and_targets(7, v, dtype, special=False)
    batch = cross_entropy(x, t, reduction="none")
    xb = x.clone().requires_grad_()
    cross_entropy(xb, t, reduction="sum").backward()
    for i in (0, 3, 6):
        xi = placed(x[i : i + 1], i * v % (16 // x.element_size())).requires_grad_()
        alone = cross_entropy(xi, t[i : i + 1], reduction="none")  # "sum" rounds in the kernel:
        cross_entropy(xi, t[i : i + 1], reduction="sum").backward()  # the interpreter truncates
        assert torch.equal(alone, batch[i : i + 1]) and torch.equal(xi.grad, xb.grad[i : i + 1])


@given(
    m=st.integers(1, 5),
    v=st.integers(1, 150),
    scale=st.sampled_from([0.1, 3.0, 100.0]),
    eps=st.sampled_from([0.0, 0.3]),
    reduction=st.sampled_from(["mean", "sum", "none"]),
    seed=st.integers(0, 2**31 - 1),
)
def test_hypothesis_random_shapes(m, v, scale, eps, reduction, seed):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(m, v, generator=g) * scale).to(DEVICE)
    t = torch.randint(0, v, (m,), generator=g).to(DEVICE)
    t[torch.rand(m, generator=g).to(DEVICE) < 0.2] = IGNORE
    check(x, t, reduction, eps)


def test_one_row_logits_and_bad_arguments():
    x = torch.randn(20, dtype=torch.float64, device=DEVICE)
    t = torch.tensor(4, device=DEVICE)
    torch.testing.assert_close(cross_entropy(x, t), F.cross_entropy(x, t), rtol=1e-12, atol=0)
    with pytest.raises(TypeError, match="target"):
        cross_entropy(torch.randn(2, 3, device=DEVICE), torch.rand(2, 3, device=DEVICE))
    with pytest.raises(ValueError, match="batch_size"):
        cross_entropy(torch.randn(2, 3, device=DEVICE), torch.zeros(3, dtype=torch.long, device=DEVICE))
    with pytest.raises(ValueError, match="reduction"):
        cross_entropy(
            torch.randn(2, 3, device=DEVICE), torch.zeros(2, dtype=torch.long, device=DEVICE), reduction="avg"
        )
    with pytest.raises(ValueError, match="label_smoothing"):
        cross_entropy(
            torch.randn(2, 3, device=DEVICE),
            torch.zeros(2, dtype=torch.long, device=DEVICE),
            label_smoothing=2,
        )


def test_torch_compile_matches_eager():
    x, t = logits_and_targets(4, 60, torch.float32, special=False)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    compiled = torch.compile(
        lambda v, w: cross_entropy(v, w, label_smoothing=0.1), backend="aot_eager", fullgraph=True
    )
    la, lb = compiled(xa, t), cross_entropy(xb, t, label_smoothing=0.1)
    (la * 2).backward()
    (lb * 2).backward()
    torch.testing.assert_close(la, lb, rtol=0, atol=0)
    torch.testing.assert_close(xa.grad, xb.grad, rtol=1e-6, atol=1e-9)


# --- GPU ---------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("v", [600, 50257, 128256, 256000])
@pytest.mark.parametrize("reduction,eps", [("mean", 0.0), ("sum", 0.1), ("none", 0.0)])
def test_gpu_vocabularies(v, dtype, reduction, eps):
    m = 65539 if v == 600 else 96  # 600: many rows a program, the last program ragged
    x, t = logits_and_targets(m, v, dtype)
    check(x, t, reduction, eps)
    x, t = logits_and_targets(m, v, dtype, seed=2, special=False)
    check(x, t, reduction, eps, dloss_scale=1.0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_short_rows_batch_invariant(dtype):
    """Rows of 600, many a program: a row's loss and gradient are the same bits alone."""
    x, t = logits_and_targets(65539, 600, dtype, special=False)
    batch = cross_entropy(x, t, reduction="none")
    xb = x.clone().requires_grad_()
    cross_entropy(xb, t, reduction="sum").backward()
    for i in (0, 5, 4099, 65538):
        xi = x[i : i + 1].clone().requires_grad_()
        alone = cross_entropy(xi, t[i : i + 1], reduction="sum")
        alone.backward()
        assert torch.equal(alone, batch[i]) and torch.equal(xi.grad, xb.grad[i : i + 1])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_memory_is_the_gradient_and_o_of_m(dtype):
    """Forward and backward of the mean loss hold the gradient and O(M) more, no copy of the
    logits (F.cross_entropy keeps the log-probabilities: a second copy)."""
    x, t = logits_and_targets(2048, 50257, dtype, special=False)
    x.requires_grad_()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    cross_entropy(x, t).backward()
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - base
    assert extra <= x.numel() * x.element_size() + 64 * x.shape[0] + (1 << 20), extra
    x.grad = None
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    cross_entropy(x.detach().clone().requires_grad_(), t, inplace_backward=True)
    assert torch.cuda.max_memory_allocated() - base <= x.numel() * x.element_size() + (1 << 20)


@pytest.mark.gpu
def test_gpu_torch_compile_inductor():
    x, t = logits_and_targets(512, 50257, torch.bfloat16, special=False)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    compiled = torch.compile(lambda v, w: cross_entropy(v, w), fullgraph=True)
    la, lb = compiled(xa, t), cross_entropy(xb, t)
    la.backward()
    lb.backward()
    torch.testing.assert_close(la, lb, rtol=0, atol=0)
    torch.testing.assert_close(xa.grad, xb.grad, rtol=1e-2, atol=1e-6)
