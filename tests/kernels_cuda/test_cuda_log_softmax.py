"""kernels_cuda.log_softmax, the op (cuda/10_log_softmax.cu, and the softmax's kernels with a log epilogue).

CPU: the torch.library fake impls give F.log_softmax's shape and dtype under FakeTensorMode; bad
arguments get one-line errors (the plans and the compiled kernels: test_cuda_log_softmax_plans.py).
GPU (marked `gpu`): against torch's log_softmax in float64 on fresh random inputs with
NaN-poisoned outputs, every dtype, dims and layouts, rows past the shared memory's size (over a
cluster on sm_90, and odd ones staged in part by 10), adversarial rows (+-inf, NaN, huge
magnitudes); the backward and gradcheck in fp64; batch invariance (a row alone gives the same bits
as in any batch, at its offset mod 16 bytes); torch.compile.
Run: scripts/test-in-place tests/kernels_cuda/test_cuda_log_softmax.py -m gpu
"""

from __future__ import annotations

import math

import pytest
import torch
from kernels_cuda import arrays
from kernels_cuda import log_softmax_op as ls
from kernels_cuda import row_kernels as rk
from labtools.ops import tolerance

DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
}


# --- CPU ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_fake_impls_give_log_softmax_shapes_and_dtypes(dtype):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        for shape, dim in (((4, 600), -1), ((3, 7, 5), 1), ((9,), 0), ((), 0), ((2, 0, 3), 1)):
            x = torch.empty(shape, dtype=DTYPES[dtype], device="cuda")
            y = torch.ops.kernels_cuda.log_softmax(x, dim)
            assert y.shape == x.shape and y.dtype == x.dtype and y.device == x.device
            dx = torch.ops.kernels_cuda.log_softmax_backward(y, y, dim)
            assert dx.shape == x.shape and dx.dtype == x.dtype


def test_bad_arguments_get_one_line_errors():
    cases = [
        (lambda: ls.log_softmax(torch.zeros(3, 4)), ValueError, "on cpu"),
        (lambda: ls.log_softmax(torch.zeros(3, 4, dtype=torch.int32)), TypeError, "int32"),
        (lambda: ls.log_softmax([1.0, 2.0]), TypeError, "torch tensor"),
    ]
    for call, kind, words in cases:
        with pytest.raises(kind, match=words) as info:
            call()
        assert "\n" not in str(info.value)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(3, 4, device="cuda")
        with pytest.raises(ValueError, match="dim") as info:
            ls.log_softmax(x, dim=2)
        assert "\n" not in str(info.value)


# --- GPU ---------------------------------------------------------------------------------------


def _close(got: torch.Tensor, ref: torch.Tensor, dtype: str, what: str, torch_op=None) -> None:
    """got (any dtype) against a float64 reference: same NaN and infinity positions, the rest
    within the dtype's stated tolerance, or within twice torch's own error where `torch_op` (torch's
    result on the same input) is given: no worse than the op we replace."""
    got, ref = got.double().cpu(), ref.double().cpu()
    assert torch.equal(got.isnan(), ref.isnan()), f"{what}: NaN positions differ"
    inf = ref.isinf()
    assert torch.equal(got[inf], ref[inf]), f"{what}: infinities differ"
    fin = ~(ref.isnan() | inf)
    tol = dict(tolerance(dtype))
    err = (got[fin] - ref[fin]).abs()
    if torch_op is not None and err.numel():
        tol["atol"] = max(tol["atol"], 2 * float((torch_op.double().cpu()[fin] - ref[fin]).abs().max()))
    bound = tol["atol"] + tol["rtol"] * ref[fin].abs()
    worst = int(torch.argmax(err - bound)) if err.numel() else 0
    assert bool((err <= bound).all()), (
        f"{what}: max error {float(err.max()):.3g} at value {float(ref[fin][worst]):.6g}; tolerance {tol}"
    )


def _ref_log_softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    return torch.log_softmax(x.detach().double().cpu(), dim)


LONG = 128256  # rows past 227 KB of whole packs: over a cluster (04 and 07 with the log epilogue) on sm_90
LONG_ODD = (
    LONG - 1
)  # not whole packs: over a cluster where x's and y's rows share offsets, else 10 (part staged)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("N", [1, 7, 32, 600, 1000, 4097, 8192, 50257, LONG_ODD, LONG])
def test_forward_matches_float64_reference(dtype, N):
    torch.manual_seed(N)
    M = max(1, min(64, (1 << 21) // N))
    x = (torch.randn(M, N, device="cuda", dtype=torch.float64) * 4).to(DTYPES[dtype])
    with arrays.poison_outputs():
        y = ls.log_softmax(x)
    assert y.dtype == x.dtype and y.shape == x.shape
    _close(y, _ref_log_softmax(x, -1), dtype, f"log_softmax {M}x{N} {dtype}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("layout", ["dim0", "middle", "sliced", "offset", "broadcast", "0-d"])
def test_any_dim_and_layout(dtype, layout):
    torch.manual_seed(1)
    base = torch.randn(6, 40, 24, device="cuda").to(DTYPES[dtype])
    x, dim = {
        "dim0": (base, 0),
        "middle": (base, 1),
        "sliced": (base[:, ::2, 3:19], -1),
        "offset": (base.reshape(-1)[3 : 3 + 5 * 64].view(5, 64), -1),  # rows not 16-byte aligned
        "broadcast": (base[0, 0].expand(7, 24), -1),
        "0-d": (base[0, 0, 0], 0),
    }[layout]
    with arrays.poison_outputs():
        y = ls.log_softmax(x, dim)
    _close(y, _ref_log_softmax(x, dim), dtype, f"log_softmax {layout}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("N", [600, 4096, 50257, LONG])
def test_adversarial_rows(dtype, N):
    torch.manual_seed(2)
    x = torch.randn(10, N, dtype=torch.float64) * 3
    x[0, 0] = x[0].max() + 30  # max first
    x[1, -1] = x[1].max() + 30  # max last
    x[2, ::3] = 50.0  # max repeated
    x[3] *= 1e4 if dtype == "bfloat16" else 1e30  # huge magnitudes
    x[4, 5] = math.inf  # +inf: the row is NaN
    x[5, :] = -math.inf  # all -inf: NaN
    x[6, ::2] = -math.inf  # some -inf: those are -inf
    x[7, 9] = math.nan
    x[8] = x[8] * 0 + 7.0  # constant: -log(N)
    x = x.to(DTYPES[dtype]).cuda()
    with arrays.poison_outputs():
        y = ls.log_softmax(x)
    # the cancellation in x - max - log(sum) costs a few ulps of the row's largest magnitude
    # (in float64 more than the stated atol): held to torch's own error on the same rows
    theirs = torch.log_softmax(x, -1)
    _close(y, _ref_log_softmax(x, -1), dtype, f"adversarial rows N={N}", torch_op=theirs)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("N", [600, 4096, 50257, LONG_ODD, LONG])
def test_backward_matches_float64_reference(dtype, N):
    torch.manual_seed(3)
    M = 4 if N >= LONG_ODD else 16
    x = (torch.randn(M, N, device="cuda", dtype=torch.float64) * 3).to(DTYPES[dtype]).requires_grad_()
    dy = torch.randn(M, N, device="cuda", dtype=torch.float64).to(DTYPES[dtype])
    with arrays.poison_outputs():
        y = ls.log_softmax(x)
        (dx,) = torch.autograd.grad(y, x, dy)
    x64 = x.detach().double().cpu().requires_grad_()
    (ref,) = torch.autograd.grad(torch.log_softmax(x64, -1), x64, dy.double().cpu())
    _close(y, _ref_log_softmax(x, -1), dtype, "forward")
    top = ref.abs().max()  # dx sums N terms: compare relative to the largest element
    if dtype in ("float32", "float64"):
        _close(dx / top, ref / top, dtype, f"backward {M}x{N} {dtype}")
    else:  # y is rounded to 16 bits before the backward reads it, in torch as here: compare errors
        xt = x.detach().requires_grad_()
        (torch_dx,) = torch.autograd.grad(torch.log_softmax(xt, -1), xt, dy)
        ours = float((dx.double().cpu() - ref).abs().max() / top)
        theirs = float((torch_dx.double().cpu() - ref).abs().max() / top)
        assert ours <= 2 * theirs + 1e-6, f"backward {M}x{N} {dtype}: error {ours:.3g}, torch's {theirs:.3g}"


@pytest.mark.gpu
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gradcheck_fp64(dim):
    x = torch.randn(5, 9, 3, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: ls.log_softmax(t, dim), (x,))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("N", [600, 50257, 4097 * 8, LONG])
def test_batch_invariance_a_row_alone_equals_the_row_in_any_batch(dtype, N):
    """A row alone, at its offset in the batch from a 16-byte boundary, gives its bits in the
    batch; so do the same rows 16 bytes further on. (A row that is not whole packs is split by
    that offset, as the softmax's rows are.)"""
    torch.manual_seed(4)
    x = torch.randn(33, N, device="cuda").to(DTYPES[dtype])
    y = ls.log_softmax(x)
    pack = 16 // x.element_size()
    for i in (0, 17, 32):
        offset = x[i].data_ptr() % 16 // x.element_size()
        alone = torch.empty(N + pack, device="cuda", dtype=x.dtype)[offset : offset + N].view(1, N)
        alone.copy_(x[i])
        assert torch.equal(ls.log_softmax(alone)[0], y[i]), f"row {i} alone differs from the row in the batch"
    shifted = torch.empty(x.numel() + pack, device="cuda", dtype=x.dtype)[pack:].view_as(x)  # 16 bytes on
    shifted.copy_(x)
    assert torch.equal(ls.log_softmax(shifted), y), "the same rows at another address differ"


@pytest.mark.gpu
def test_torch_compile_runs_the_op_with_its_backward():
    x = torch.randn(8, 600, device="cuda", requires_grad=True)

    def f(t):
        return (ls.log_softmax(t * 2.0, -1) * 3.0).sum()

    compiled = torch.compile(f, fullgraph=True)
    loss = compiled(x)
    (g,) = torch.autograd.grad(loss, x)
    x64 = x.detach().double().requires_grad_()
    (ref,) = torch.autograd.grad((torch.log_softmax(x64 * 2.0, -1) * 3.0).sum(), x64)
    ref_loss = (torch.log_softmax(x64 * 2.0, -1) * 3.0).sum()
    _close(loss.detach().reshape(1), ref_loss.detach().reshape(1), "float32", "compiled loss")
    _close(g / 6, ref / 6, "float32", "compiled gradient")


@pytest.mark.gpu
def test_short_and_long_rows_take_the_softmax_kernels_and_rows_off_their_boundaries_ten(monkeypatch):
    """The launches themselves: rows of 600 go to 03 and 06's fused kernel with LOG=1 (any
    device); on an sm_90 device LONG rows and LONG_ODD rows whose arrays share their offsets go to
    04 and 07 with LOG=1; the forward of LONG_ODD rows read from a view one element off x's
    boundary (y's rows at other offsets) to 10, staged in part (its backward reads the fresh y, dy
    and dx: the cluster), and all match float64 (elsewhere the long rows stay on 10)."""
    seen = []
    real = rk.launch
    monkeypatch.setattr(rk, "launch", lambda spec, *a: seen.append(spec) or real(spec, *a))
    sm90 = torch.cuda.get_device_capability()[0] == 9
    base = torch.randn(3 * LONG_ODD + 1, device="cuda")
    ten = ("log_softmax_forward", None), ("log_softmax_backward", None)
    cluster = ("softmax_cluster", 1), ("softmax_backward_cluster", 1)
    for x, expected in (
        (torch.randn(3, 600, device="cuda"), (("softmax_fused", 1), ("softmax_backward_fused", 1))),
        (torch.randn(3, LONG, device="cuda"), cluster if sm90 else ten),
        (torch.randn(3, LONG_ODD, device="cuda"), cluster if sm90 else ten),
        (base[1:].view(3, LONG_ODD), (ten[0], cluster[1] if sm90 else ten[1])),
    ):
        x = x.detach().requires_grad_()
        seen.clear()
        with arrays.poison_outputs():
            y = ls.log_softmax(x)
            (dx,) = torch.autograd.grad(y, x, torch.ones_like(y))
        kernels = tuple((s.kernel, dict(s.constants).get("LOG")) for s in seen)
        assert kernels == tuple(expected), (x.shape, x.data_ptr() % 16, kernels)
        _close(y, _ref_log_softmax(x, -1), "float32", f"log_softmax {tuple(x.shape)} at {x.data_ptr() % 16}")
        x64 = x.detach().double().cpu().requires_grad_()
        (ref,) = torch.autograd.grad(torch.log_softmax(x64, -1), x64, torch.ones_like(x64))
        top = ref.abs().max()
        _close(dx / top, ref / top, "float32", f"backward {tuple(x.shape)} at {x.data_ptr() % 16}")
