"""kernels_cuda.cross_entropy and token_logprobs_and_entropy (cuda/09_cross_entropy.cu).

CPU: every kernel compiles with NVRTC for sm_90 (sm_80: test_cuda_codegen's sample) in every dtype
(fp64 included) with no spill and no local memory, reading the row and writing the gradient in
16-byte packs at every N; the plan (xent_config) holds every row and stays within the registers and
threads it may; the torch.library fake impls give the right shapes and dtypes under FakeTensorMode;
bad arguments get one-line errors naming the argument.
GPU (marked `gpu`): against F.cross_entropy in float64 (fresh random inputs, NaN-poisoned
outputs) for V in {600, 50257, 128256} in fp32 and bf16, every reduction, label smoothing, ignored
targets; adversarial rows (+-inf, NaN, huge logits, every target ignored); gradients, the
upstream gradient's scale, a second backward, inplace_backward, gradcheck in fp64; batch
invariance (a row alone gives the same bits as in the batch); rows of odd length at every
offset mod 16 bytes, with the gradient's rows lined up with them or not, in every dtype; every
plan of the ladder at its capacity and one pack past it; 65539 rows of 600; torch.compile; the
extra memory.
Run: scripts/test-in-place tests/kernels_cuda/test_cuda_cross_entropy.py -m gpu
"""

from __future__ import annotations

import math
import re

import pytest
import torch
import torch.nn.functional as F
from kernels_cuda import arrays, codegen, compiler
from kernels_cuda import cross_entropy_op as ce
from kernels_cuda import log_softmax_op as ls
from kernels_cuda import row_kernels as rk
from labtools.ops import tolerance

# sm_90 here; test_cuda_codegen compiles every specialization for sm_90 and a sample of each kernel
# (these among them) for sm_80
ARCHS = ("sm_90",)
DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
}


# --- CPU ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compiled(offline_cache):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(codegen.CACHE_ENV, str(offline_cache))
        mp.setattr(compiler, "_compiled", {})
        specs = [rk.cross_entropy_spec("cross_entropy_scale", d, rk.scale_config(d)) for d in DTYPES]
        for dtype in DTYPES:
            for n in (600, 16384, 50257):  # rows sharing a block, a block's registers, rows in steps
                cfg = rk.xent_config(n, dtype)
                specs += [
                    rk.cross_entropy_spec("cross_entropy_forward", dtype, cfg, e) for e in (False, True)
                ]
                specs.append(rk.cross_entropy_spec("cross_entropy_backward", dtype, cfg))
        specs = list(dict.fromkeys(specs))
        assert set(specs) <= set(rk.specializations())
        yield codegen.compile_all(ARCHS, specs)


def test_every_kernel_compiles_in_every_dtype_without_spills_or_local_memory(compiled):
    kernels = ("cross_entropy_forward", "cross_entropy_backward", "cross_entropy_scale")
    assert {(r.spec.kernel, r.spec.dtype) for r in compiled} == {(k, d) for k in kernels for d in DTYPES}
    for r in compiled:
        assert r.resources is None or not (r.resources.spill_bytes or r.resources.stack_bytes), r.spec.name
        c = dict(r.spec.constants)
        assert r.resources is None or r.resources.registers * c["TPR"] * c["RPB"] <= 65536, r.spec.name
        ptx = r.ptx_path.read_text()
        assert ".local" not in ptx, r.spec.name
        if r.spec.kernel != "cross_entropy_scale":  # rows of any length: 16-byte packs in and out
            assert "st.global.v4.b32" in ptx, r.spec.name
            assert re.search(r"ld\.global[\w.]*\.v(4\.|2\.f64)", ptx), r.spec.name  # fp64: two a load


def test_xent_config_holds_every_row_and_depends_on_n_and_dtype_alone():
    """The cross-entropy's plan: short rows share blocks a warp or less a row, rows up to 256
    threads x 8 packs sit in registers, longer ones go in steps (a block a row); 16-byte packs at
    every N (odd ones included); every plan one the offline compile lists."""
    assert rk.xent_config(600, "float32") == rk.XentConfig(32, 2, 5, 4, False)
    assert rk.xent_config(600, "bfloat16") == rk.XentConfig(16, 4, 5, 8, False)
    assert rk.xent_config(1000, "bfloat16") == rk.XentConfig(32, 2, 4, 8, False)
    assert rk.xent_config(2048, "float32") == rk.XentConfig(64, 2, 8, 4, False)
    assert rk.xent_config(601, "bfloat16") == rk.xent_config(600, "bfloat16")
    assert rk.xent_config(16384, "bfloat16") == rk.XentConfig(256, 1, 8, 8, False)
    assert rk.xent_config(32000, "bfloat16") == rk.XentConfig(512, 1, 4, 8, True)
    assert rk.xent_config(50257, "bfloat16") == rk.XentConfig(512, 1, 4, 8, True)
    assert rk.xent_config(50257, "float32") == rk.XentConfig(1024, 1, 4, 4, True)  # one block an SM
    assert rk.xent_config(128256, "bfloat16") == rk.XentConfig(1024, 1, 4, 8, True)
    assert rk.xent_config(5, "float16") == rk.XentConfig(8, 8, 2, 8, False)
    assert rk.xent_config(4100, "float64").steps and rk.xent_config(4100, "float64").tpr == 256
    for dtype in DTYPES:
        vec = 16 // rk.ITEMSIZE[dtype]
        every = rk.every_xent_config(dtype)
        for n in [
            1,
            2,
            7,
            9,
            15,
            17,
            600,
            601,
            4095,
            4097,
            32000,
            32769,
            50257,
            65536,
            65537,
            128256,
            rk.MAX_N,
        ]:
            cfg = rk.xent_config(n, dtype)
            assert cfg in every and cfg.vec == vec, (n, dtype)
            assert cfg.steps or cfg.capacity() >= n // vec, (n, dtype)
            assert not cfg.steps or cfg.rpb == 1, (n, dtype)
            assert cfg.tpr >= 8 and 2 * (vec - 1) <= 2 * cfg.tpr, (n, dtype)  # head and tail: 2 a thread
            two_blocks = n * rk.ITEMSIZE[dtype] <= rk.XENT_TWO_BLOCKS_BYTES  # two rows an SM's shared memory
            assert cfg.threads <= (256 if dtype == "float64" else 512 if two_blocks else 1024), (n, dtype)
        # the smallest plan that holds the row: one fewer pack never takes a bigger plan
        sizes = [c.capacity() for c in every if not c.steps]
        assert sizes == sorted(sizes)
    # packs past the first step, staged as far as shared memory goes
    cfg = rk.xent_config(50257, "bfloat16")
    assert rk.xent_staged_packs(50257, "bfloat16", cfg, 227 * 1024) == 50257 // 8
    cfg = rk.xent_config(256000, "bfloat16")
    assert rk.xent_staged_packs(256000, "bfloat16", cfg, 227 * 1024) == (227 * 1024 - rk.STAGE_RESERVE) // 16
    assert rk.xent_staged_packs(600, "float32", rk.xent_config(600, "float32"), 227 * 1024) == 0


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
