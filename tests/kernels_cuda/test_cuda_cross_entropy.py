"""kernels_cuda.cross_entropy and token_logprobs_and_entropy (cuda/09_cross_entropy.cu): the op's
semantics.

CPU: the torch.library fake impls give the right shapes and dtypes under FakeTensorMode; bad
arguments get one-line errors naming the argument.
GPU (marked `gpu`): against F.cross_entropy in float64 (fresh random inputs, NaN-poisoned
outputs) for V in {600, 50257, 128256} in fp32 and bf16, every reduction, label smoothing, ignored
targets; adversarial rows (+-inf, NaN, huge logits, every target ignored); gradients, the
upstream gradient's scale, a second backward, inplace_backward, gradcheck in fp64; batch
invariance (a row alone gives the same bits as in the batch); torch.compile; token log-probabilities
and entropy with their gradients; the extra memory.
The compiled kernels and the plan are in test_cuda_cross_entropy_kernels.py, rows at every offset
and every plan of the ladder in test_cuda_cross_entropy_rows.py, the shared inputs and checks in
cuda_xent_helpers.py.
Run: scripts/test-in-place tests/kernels_cuda/test_cuda_cross_entropy.py -m gpu
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from cuda_xent_helpers import (
    DTYPES,
    _close,
    _inputs,
    _ours,
    _reference,
)
from kernels_cuda import arrays
from kernels_cuda import cross_entropy_op as ce

# --- CPU ---------------------------------------------------------------------------------------


def test_fake_impls_give_shapes_and_dtypes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        for dtype, acc in ((torch.bfloat16, torch.float32), (torch.float64, torch.float64)):
            for shape, tshape in (((4, 600), (4,)), ((600,), ()), ((2, 7, 5), (2, 5))):
                x = torch.empty(shape, dtype=dtype, device="cuda")
                t = torch.zeros(tshape, dtype=torch.int64, device="cuda")
                for reduction in ce.REDUCTIONS:
                    loss, lse, grad = torch.ops.kernels_cuda.cross_entropy_forward(
                        x, t, -100, reduction, 0.1, True
                    )
                    assert loss.dtype == dtype and loss.shape == (t.shape if reduction == "none" else ())
                    assert lse.shape == (t.numel(),) and lse.dtype == torch.float64  # max + log s exactly
                    assert grad.shape == (x.shape if reduction != "none" else (0,)) and grad.dtype == dtype
                g = torch.ops.kernels_cuda.cross_entropy_backward(
                    x, t, lse, lse.to(acc), None, None, -100, 0.0
                )
                assert g.shape == x.shape and g.dtype == dtype
                lp, h, lse = torch.ops.kernels_cuda.token_logprobs_and_entropy(x, t, -100)
                assert lp.shape == h.shape == t.shape and lp.dtype == h.dtype == acc


def test_bad_arguments_get_one_line_errors():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(4, 10, device="cuda")
        t = torch.zeros(4, dtype=torch.int64, device="cuda")
        cases = [
            (lambda: ce.cross_entropy(x, t.float()), TypeError, "target has dtype float32"),
            (lambda: ce.cross_entropy(x, t[:3]), ValueError, "target has shape"),
            (lambda: ce.cross_entropy(x, t, reduction="avg"), ValueError, "reduction must be one of"),
            (lambda: ce.cross_entropy(x, t, label_smoothing=1.5), ValueError, "label_smoothing"),
            (lambda: ce.cross_entropy(x, t, ignore_index=1.0), TypeError, "ignore_index"),
            (lambda: ce.cross_entropy(x.int(), t), TypeError, "logits has dtype int32"),
            (lambda: ce.cross_entropy(x[0, 0], t[0]), ValueError, "class dim"),
            (lambda: ce.token_logprobs_and_entropy(x, t[:2]), ValueError, "target has shape"),
        ]
        for call, kind, words in cases:
            with pytest.raises(kind, match=words) as info:
                call()
            assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="on cpu") as info:
        ce.cross_entropy(torch.zeros(2, 3), torch.zeros(2, dtype=torch.int64))
    assert "\n" not in str(info.value)


# --- GPU ---------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("V", [600, 50257, 128256])
@pytest.mark.parametrize("reduction", ce.REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_loss_and_gradient_match_float64_reference(dtype, V, reduction, smoothing):
    M = 37 if V < 100_000 else 9
    x, t = _inputs(M, V, dtype, seed=V + M)
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    loss, grad = _ours(x, t, **kw)
    ref_loss, ref_grad = _reference(x, t, **kw)
    assert loss.dtype == x.dtype and loss.shape == ref_loss.shape
    _close(loss, ref_loss, dtype, f"loss {M}x{V} {reduction} eps={smoothing}")
    top = ref_grad.abs().max()
    _close(grad / top, ref_grad / top, dtype, f"gradient {M}x{V} {reduction} eps={smoothing}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("V", [600, 50257])
def test_adversarial_rows(dtype, V):
    x, t = _inputs(9, V, dtype, seed=5, ignored=0.0)
    x, tc = x.double().cpu(), t.cpu()
    x[0, 3] = math.inf  # +inf: the row's loss and gradient are NaN
    x[1, tc[1]] = -math.inf  # -inf at the target: loss +inf
    x[2, ::2] = -math.inf  # masked half of the vocabulary
    x[3, 7] = math.nan
    x[4] *= 1e4 if dtype == "bfloat16" else 1e30  # huge logits
    x[5, :] = 12.0  # constant row: loss log(V)
    x[6, tc[6]] = x[6].max() + 100  # confident and right
    x = x.to(DTYPES[dtype]).cuda()
    for reduction in ("none", "sum"):
        loss, grad = _ours(x, t, reduction=reduction)
        ref_loss, ref_grad = _reference(x, t, reduction=reduction)
        _close(loss, ref_loss, dtype, f"adversarial loss ({reduction})")
        if reduction == "none":
            _close(grad, ref_grad, dtype, "adversarial gradient")


@pytest.mark.gpu
@pytest.mark.parametrize("reduction", ce.REDUCTIONS)
def test_every_target_ignored(reduction):
    x, t = _inputs(5, 600, "float32", seed=6, ignored=1.0)
    loss, grad = _ours(x, t, reduction=reduction)
    ref_loss, _ = _reference(x, t, reduction=reduction)
    _close(loss, ref_loss, "float32", f"all ignored ({reduction})")  # mean: NaN, sum: 0, none: zeros
    assert torch.equal(grad, torch.zeros_like(grad)), "ignored rows must get a zero gradient"


@pytest.mark.gpu
def test_other_ignore_index_int32_targets_and_targets_out_of_range():
    x, t = _inputs(8, 600, "float32", seed=7, ignored=0.0)
    t[2] = 5
    loss = ce.cross_entropy(x, t.int(), ignore_index=5, reduction="none")
    ref, _ = _reference(x, t, ignore_index=5, reduction="none")
    _close(loss, ref, "float32", "ignore_index=5, int32 targets")
    t[3] = 600  # out of range: NaN (torch raises; a kernel cannot without a sync)
    loss = ce.cross_entropy(x, t, reduction="none")
    assert bool(loss[3].isnan()) and not bool(loss[torch.arange(8) != 3].isnan().any())


@pytest.mark.gpu
def test_nd_logits_and_1d_logits():
    g = torch.Generator().manual_seed(8)
    x = torch.randn(3, 11, 4, 2, generator=g).cuda()
    t = torch.randint(0, 11, (3, 4, 2), generator=g).cuda()
    for reduction in ce.REDUCTIONS:
        loss, grad = _ours(x, t, reduction=reduction, label_smoothing=0.05)
        ref_loss, ref_grad = _reference(x, t, reduction=reduction, label_smoothing=0.05)
        _close(loss, ref_loss, "float32", f"N-d loss ({reduction})")
        _close(grad, ref_grad, "float32", f"N-d gradient ({reduction})")
    loss, grad = _ours(x[0, :, 0, 0], t[0, 0, 0], reduction="mean")
    ref_loss, ref_grad = _reference(x[0, :, 0, 0], t[0, 0, 0], reduction="mean")
    _close(loss, ref_loss, "float32", "1-d loss")
    _close(grad, ref_grad, "float32", "1-d gradient")


@pytest.mark.gpu
def test_vocabulary_of_256000_bf16():
    x, t = _inputs(3, 256000, "bfloat16", seed=9, ignored=0.0)
    loss, grad = _ours(x, t)
    ref_loss, ref_grad = _reference(x, t)
    _close(loss, ref_loss, "bfloat16", "loss V=256000")
    _close(grad / ref_grad.abs().max(), ref_grad / ref_grad.abs().max(), "bfloat16", "gradient V=256000")


@pytest.mark.gpu
def test_upstream_gradient_scale_and_a_second_backward():
    x, t = _inputs(16, 50257, "float32", seed=10)
    xg = x.clone().requires_grad_()
    loss = ce.cross_entropy(xg, t, label_smoothing=0.1)
    (g1,) = torch.autograd.grad(loss * 0.25, xg, retain_graph=True)
    g1 = g1.clone()  # the next backward rescales the same buffer
    (g2,) = torch.autograd.grad(loss * 3.0, xg, retain_graph=True)
    g2 = g2.clone()
    (g3,) = torch.autograd.grad(loss, xg)
    _, ref = _reference(x, t, label_smoothing=0.1)
    top = ref.abs().max()
    _close(g1 / (0.25 * top), ref / top, "float32", "gradient x 0.25")
    _close(g2 / (3.0 * top), ref / top, "float32", "gradient x 3 (second backward)")
    _close(g3 / top, ref / top, "float32", "gradient x 1 (third backward)")
    xl = x.clone().requires_grad_()  # through AccumulateGrad into a leaf's .grad, twice
    loss = ce.cross_entropy(xl, t, label_smoothing=0.1)
    loss.backward(retain_graph=True)
    loss.backward()
    _close(xl.grad / (2 * top), ref / top, "float32", "accumulated .grad")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_inplace_backward_writes_the_same_gradient_over_the_logits(dtype):
    x, t = _inputs(12, 50257 if dtype == "float32" else 32000, dtype, seed=11)
    _, fresh = _ours(x, t)
    xi = x.clone().requires_grad_()
    loss = ce.cross_entropy(xi, t, inplace_backward=True)
    (g,) = torch.autograd.grad(loss, xi)
    assert torch.equal(g, fresh), "inplace_backward changed the gradient"
    assert g.data_ptr() == xi.data_ptr(), "inplace_backward did not write over the logits"


@pytest.mark.gpu
@pytest.mark.parametrize("reduction", ce.REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_gradcheck_fp64(reduction, smoothing):
    g = torch.Generator().manual_seed(12)
    x = torch.randn(6, 9, generator=g, dtype=torch.float64).cuda().requires_grad_()
    t = torch.tensor([0, 8, -100, 3, 3, 5]).cuda()
    assert torch.autograd.gradcheck(
        lambda v: ce.cross_entropy(v, t, reduction=reduction, label_smoothing=smoothing), (x,)
    )
    x3 = torch.randn(2, 5, 3, generator=g, dtype=torch.float64).cuda().requires_grad_()
    t3 = torch.tensor([[0, 4, 2], [1, -100, 3]]).cuda()
    assert torch.autograd.gradcheck(lambda v: ce.cross_entropy(v, t3, reduction=reduction), (x3,))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("V", [600, 50257, 128256])
def test_batch_invariance_a_row_alone_equals_the_row_in_the_batch(dtype, V):
    """A row alone, as a view of the batch (at its own address, which with (N, dtype) fixes how it
    is split into 16-byte packs), gives the bits it has in the batch."""
    x, t = _inputs(24, V, dtype, seed=13, ignored=0.1)
    xg = x.clone().requires_grad_()
    with arrays.poison_outputs():
        (grad,) = torch.autograd.grad(ce.cross_entropy(xg, t, reduction="sum", label_smoothing=0.1), xg)
    rows = ce.cross_entropy(x, t, reduction="none", label_smoothing=0.1)
    for i in (0, 1, 3, 11, 23):
        xi = xg[i : i + 1]
        with arrays.poison_outputs():
            alone = ce.cross_entropy(xi, t[i : i + 1], reduction="sum", label_smoothing=0.1)
            (g_alone,) = torch.autograd.grad(alone, xi)
        assert torch.equal(alone, rows[i]), f"row {i}'s loss alone differs from its loss in the batch"
        assert torch.equal(g_alone[0], grad[i]), f"row {i}'s gradient alone differs from the batch's"
    lp, h = ce.token_logprobs_and_entropy(x, t)
    lp1, h1 = ce.token_logprobs_and_entropy(x[5:6], t[5:6])
    assert torch.equal(lp1[0], lp[5]) and torch.equal(h1[0], h[5])


@pytest.mark.gpu
@pytest.mark.parametrize("reduction", ce.REDUCTIONS)
def test_torch_compile(reduction):
    x, t = _inputs(32, 600, "float32", seed=14)

    def f(v):
        return ce.cross_entropy(v * 1.5, t, reduction=reduction, label_smoothing=0.1).sum() * 2.0

    compiled = torch.compile(f, fullgraph=True)
    xg = x.clone().requires_grad_()
    loss = compiled(xg)
    (g,) = torch.autograd.grad(loss, xg)
    x64 = x.double().cpu().requires_grad_()
    ref = F.cross_entropy(x64 * 1.5, t.cpu(), reduction=reduction, label_smoothing=0.1).sum() * 2.0
    (ref_g,) = torch.autograd.grad(ref, x64)
    _close(loss.reshape(1), ref.reshape(1), "float32", "compiled loss")
    _close(g / ref_g.abs().max(), ref_g / ref_g.abs().max(), "float32", "compiled gradient")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("V", [600, 50257])
def test_token_logprobs_and_entropy_and_their_gradients(dtype, V):
    x, t = _inputs(20, V, dtype, seed=15, ignored=0.1)
    xg = x.clone().requires_grad_()
    with arrays.poison_outputs():
        lp, h = ce.token_logprobs_and_entropy(xg, t)
    w_lp, w_h = torch.randn(20, dtype=torch.float64), torch.randn(20, dtype=torch.float64)
    (g,) = torch.autograd.grad((lp.double().cpu() * w_lp).sum() + (h.double().cpu() * w_h).sum(), xg)
    x64 = x.double().cpu().requires_grad_()
    logp = torch.log_softmax(x64, -1)
    keep = t.cpu() != -100
    ref_lp = torch.where(keep, logp.gather(1, t.cpu().clamp(min=0)[:, None])[:, 0], 0.0)
    ref_h = -(logp.exp() * logp).sum(-1)
    (ref_g,) = torch.autograd.grad((ref_lp * w_lp).sum() + (ref_h * w_h).sum(), x64)
    acc = "float64" if dtype == "float64" else "float32"
    _close(lp, ref_lp, acc, "log-probabilities")
    _close(h, ref_h, acc, "entropy")
    top = ref_g.abs().max()
    _close(g / top, ref_g / top, dtype, "their gradient")
    if dtype == "float64":  # each output's gradient alone, to the last bit of fp64's check
        small, ts = x64.detach()[:4, :9].cuda().requires_grad_(), torch.tensor([1, -100, 8, 0]).cuda()
        assert torch.autograd.gradcheck(lambda v: ce.token_logprobs_and_entropy(v, ts), (small,))


@pytest.mark.gpu
def test_forward_and_backward_hold_only_the_gradient_and_o_m_more():
    x, t = _inputs(2048, 50257, "bfloat16", seed=16, ignored=0.0)
    xg = x.clone().requires_grad_()
    for _ in range(2):  # the second round runs on compiled, loaded kernels
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        (g,) = torch.autograd.grad(ce.cross_entropy(xg, t), xg)
        torch.cuda.synchronize()
        extra = torch.cuda.max_memory_allocated() - base
        del g
    allowed = x.numel() * x.element_size() + 64 * x.shape[0] + (1 << 20)
    assert extra <= allowed, (
        f"forward + backward allocated {extra} bytes beyond the inputs; allowed {allowed}"
    )
