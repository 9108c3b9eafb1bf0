"""kernels_triton.log_softmax against F.log_softmax on float64, forward and backward.

Without a GPU these run under Triton's interpreter on small rows, on both paths (the row held
whole, and the looped online pass, forced by shrinking xent_launch.ROW_SHAPES). Outputs are
allocated from NaN-poisoned memory (torch.empty patched), so an element a kernel does not
write fails the comparison. The `gpu` tests add the long rows and bf16 at real sizes.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from kernels_triton import SoftmaxDimError, log_softmax, log_softmax_backward
from labtools.ops import softmax_stress_rows, tolerance
from xent_helpers import DEVICE, FAMILY_MARKS

pytestmark = FAMILY_MARKS

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


def adversarial(n: int, dtype, seed: int = 0) -> torch.Tensor:
    """Normal rows, then the softmax stress rows (max first/last/repeated, huge magnitudes),
    rows with -inf, +inf, NaN, all -inf, and logits near 1e4."""
    g = torch.Generator().manual_seed(seed)
    rows = [torch.randn(3, n, generator=g, dtype=torch.float64) * 3]
    if n >= 3:
        rows.append(torch.from_numpy(softmax_stress_rows(n, seed)).double())
    special = torch.randn(5, n, generator=g, dtype=torch.float64)
    special[0, 0] = float("-inf")
    special[1] = float("-inf")
    special[2, n // 2] = float("inf")
    special[3, n - 1] = float("nan")
    special[4] += 1e4
    rows.append(special)
    x = torch.cat(rows)
    if dtype == torch.float16:
        x = x.clamp(-6e4, 6e4)
    return x.to(dtype).to(DEVICE)


def assert_no_worse_than_torch(got: torch.Tensor, x: torch.Tensor, dim: int = -1):
    """Within the dtype's tolerance of the float64 reference, or no further than torch's own
    result in that dtype is (twice, plus one ulp of slack); NaN where the reference is NaN."""
    want = F.log_softmax(x.double(), dim)
    theirs = F.log_softmax(x, dim).double()
    assert torch.equal(got.isnan(), want.isnan())
    err = (got.double() - want).abs().nan_to_num(0)
    their_err = (theirs - want).abs().nan_to_num(0)
    tol = tolerance(str(x.dtype).replace("torch.", ""))
    bound = torch.maximum(tol["atol"] + tol["rtol"] * want.abs().nan_to_num(0, 0, 0), 2 * their_err)
    bad = err > bound
    assert not bad.any(), (
        f"{int(bad.sum())} elements off; worst {err.max().item()} (torch: {their_err.max().item()})"
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 100])
def test_forward_matches_float64(row_path, dtype, n):
    x = adversarial(n, dtype)
    assert_no_worse_than_torch(log_softmax(x), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_backward_matches_float64_autograd(row_path, dtype):
    x = adversarial(70, dtype)[:4].requires_grad_()  # finite rows: torch's gradient is finite there
    dy = torch.randn(x.shape, dtype=dtype, device=DEVICE)
    (got,) = torch.autograd.grad(log_softmax(x), x, dy)
    x64 = x.detach().double().requires_grad_()
    (want,) = torch.autograd.grad(F.log_softmax(x64, -1), x64, dy.double())
    torch.testing.assert_close(got.double(), want, **tolerance(str(dtype).replace("torch.", "")))


def test_backward_alone_matches_formula(row_path):
    y = F.log_softmax(torch.randn(5, 90, dtype=torch.float64, device=DEVICE), -1)
    dy = torch.randn_like(y)
    want = dy - y.exp() * dy.sum(-1, keepdim=True)
    torch.testing.assert_close(log_softmax_backward(y, dy), want, rtol=1e-12, atol=1e-14)


def test_gradcheck_fp64(row_path):
    x = torch.randn(2, 9, dtype=torch.float64, device=DEVICE, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: log_softmax(t, 1), (x,), eps=1e-6, atol=1e-8)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_any_dim_and_layout(dim):
    x = torch.randn(4, 6, 5, device=DEVICE).transpose(0, 2)  # not contiguous
    assert_no_worse_than_torch(log_softmax(x, dim), x, dim)
    z = torch.randn((), device=DEVICE)
    assert log_softmax(z, 0).item() == 0.0
    assert log_softmax(torch.empty(0, 3, device=DEVICE)).shape == (0, 3)


def test_batch_invariant(row_path):
    """A row gives the same bits alone as inside a batch of any size."""
    x = torch.randn(9, 100, device=DEVICE)
    batch = log_softmax(x)
    for i in (0, 4, 8):
        assert torch.equal(log_softmax(x[i : i + 1]), batch[i : i + 1])


def placed(x: torch.Tensor, off: int, stride: int) -> torch.Tensor:
    """x copied into a fresh buffer, its rows `stride` elements apart, the first `off` elements
    past a 16-byte boundary: the layout sets each row's offset from a boundary."""
    size = x.element_size()
    buf = torch.zeros(x.shape[0] * stride + 32 // size, dtype=x.dtype, device=x.device)
    start = (-(buf.data_ptr() // size)) % (16 // size) + off
    view = buf[start:].as_strided(x.shape, (stride, 1))
    view.copy_(x)
    return view


@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_off_16_byte_boundaries_at_every_offset(row_path, dtype):
    """Rows of 77 (not whole 16-byte packs: the looped kernels split them into head, body and
    tail by where they start) at every offset from a boundary, forward and backward against
    float64 (dy and dx laid out unlike y at odd offsets); and a row's bits alone at its offset
    as in the batch."""
    vec = 16 // torch.empty((), dtype=dtype).element_size()
    x = adversarial(77, dtype)
    x[0, :2], x[1, -2:] = 40.0, 40.0  # maxima in a head and in a tail
    batch = log_softmax(x)
    y = F.log_softmax(x[:4].double(), -1)
    dy = torch.randn(y.shape, dtype=torch.float64, device=DEVICE)
    for off in range(vec):
        xs = placed(x, off, (77, 80, 81)[off % 3])
        assert_no_worse_than_torch(log_softmax(xs), x)
        yd, dyd = y.to(dtype), dy.to(dtype)
        got = log_softmax_backward(placed(yd, off, 77), placed(dyd, (off * 3) % vec, 79))
        ref = dyd.double() - yd.double().exp() * dyd.double().sum(-1, keepdim=True)
        torch.testing.assert_close(got.double(), ref, **tolerance(str(dtype).replace("torch.", "")))
        i = off + 1  # row i of the batch sits i * 77 elements past the base
        assert torch.equal(log_softmax(placed(x[i : i + 1], i * 77 % vec, 77)), batch[i : i + 1])


@given(
    m=st.integers(1, 4),
    n=st.integers(1, 200),
    scale=st.sampled_from([1e-3, 1.0, 30.0, 1e4]),
    seed=st.integers(0, 2**31 - 1),
)
def test_hypothesis_random_rows(m, n, scale, seed):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(m, n, generator=g) * scale).to(DEVICE)
    assert_no_worse_than_torch(log_softmax(x), x)


def test_bad_arguments():
    with pytest.raises(SoftmaxDimError, match="Dimension out of range"):
        log_softmax(torch.randn(2, 3, device=DEVICE), 2)
    with pytest.raises(TypeError, match="dtype"):
        log_softmax(torch.ones(2, 3, dtype=torch.int32, device=DEVICE))
    with pytest.raises(TypeError, match="dim must be an int"):
        log_softmax(torch.randn(2, 3, device=DEVICE), 1.0)


def test_torch_compile_matches_eager():
    """Under torch.compile the op is one opaque custom op with its backward (aot_eager keeps
    the test fast on the CPU; the GPU test below uses Inductor)."""
    x = torch.randn(3, 50, device=DEVICE, requires_grad=True)
    dy = torch.randn(3, 50, device=DEVICE)
    compiled = torch.compile(lambda t: log_softmax(t, -1), backend="aot_eager", fullgraph=True)
    (g1,) = torch.autograd.grad(compiled(x), x, dy)
    (g2,) = torch.autograd.grad(log_softmax(x), x, dy)
    torch.testing.assert_close(compiled(x), log_softmax(x), rtol=0, atol=0)
    torch.testing.assert_close(g1, g2, rtol=0, atol=0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(
    "shape",
    [(4096, 600), (64, 16385), (64, 50257), (16, 128256), (8, 131073), (8, 151936), (8, 163840), (8, 262144)],
)
def test_gpu_shapes(shape, dtype):
    """Rows past one program's registers go over a cluster on sm_90 (131073 to 163840 columns in two tiles a
    block, off 16-byte boundaries at 131073): the adversarial rows too."""
    x = (torch.randn(shape, device="cuda") * 4).to(dtype)
    x[0, 0], x[1, 5] = float("-inf"), 1e4
    assert_no_worse_than_torch(log_softmax(x), x)
    hard = adversarial(shape[1], dtype)
    assert_no_worse_than_torch(log_softmax(hard), hard)
    xg = x.float().requires_grad_() if dtype == torch.float32 else x.clone().requires_grad_()
    dy = torch.randn_like(xg)
    (got,) = torch.autograd.grad(log_softmax(xg), xg, dy)
    x64 = x.double().requires_grad_()
    (want,) = torch.autograd.grad(F.log_softmax(x64, -1), x64, dy.double())
    (theirs,) = torch.autograd.grad(F.log_softmax(xg, -1), xg, dy)
    # twice torch's largest error, plus fp32's relative tolerance of the largest gradient: the largest
    # error alone compares two rounding draws of one row's sum of dy, and torch's may be the small one
    err, their_err = (got.double() - want).abs().max(), (theirs.double() - want).abs().max()
    assert err <= 2 * their_err + tolerance("float32")["rtol"] * want.abs().max(), (err, their_err)


@pytest.mark.gpu
def test_gpu_torch_compile_inductor():
    x = torch.randn(256, 50257, device="cuda", requires_grad=True)
    compiled = torch.compile(lambda t: log_softmax(t, -1), fullgraph=True)
    y = compiled(x)
    torch.testing.assert_close(y, log_softmax(x), rtol=0, atol=0)
    (g,) = torch.autograd.grad(y, x, torch.ones_like(y))
    (want,) = torch.autograd.grad(F.log_softmax(x, -1), x, torch.ones_like(y))
    torch.testing.assert_close(g, want, rtol=1e-5, atol=1e-5)


def test_launch_key_holds_what_triton_specialises_on():
    """xent_launch reuses a compiled kernel only for arguments Triton would compile the same way:
    an integer 1 (a constant to Triton), a multiple of 16, a width past int32, a tensor's dtype
    and 16-byte alignment each change the key."""
    from kernels_triton.xent_launch import specialization

    def spec(arg):
        flat, key = specialization((arg,))
        assert flat == [arg.data_ptr() if isinstance(arg, torch.Tensor) else arg]  # what the C launch takes
        return tuple(key)

    assert len({spec(1), spec(2), spec(16), spec(2**31), spec(2**63)}) == 5
    assert spec(3) == spec(5) and spec(32) == spec(48)
    x = torch.zeros(8)
    assert spec(x) == spec(torch.zeros(8)) != spec(x[1:]) != spec(x.double())
    assert spec(True) != spec(False)


@pytest.mark.gpu
@pytest.mark.parametrize("m", [1, 3, 16, 17, 1])
def test_gpu_row_counts_one_after_another(m):
    """Row counts that Triton specialises differently (1, odd, a multiple of 16) launched in turn
    at one row length: each gets its own compiled kernel, none another's."""
    x = torch.randn(m, 600, device="cuda") * 4
    assert_no_worse_than_torch(log_softmax(x), x)
