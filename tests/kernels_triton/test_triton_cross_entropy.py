"""kernels_triton.cross_entropy and token_logprobs_and_entropy against torch on float64.

Without a GPU these run under Triton's interpreter on small vocabularies, on both paths (row
held whole; looped, forced by shrinking xent_launch.ROW_SHAPES). Outputs come from
NaN-poisoned memory (torch.empty patched). The `gpu` tests run GPT-2's and Llama 3's
vocabularies in bf16 and fp32, and check the memory the op holds.
"""

from __future__ import annotations

import importlib

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from kernels_triton import cross_entropy, token_logprobs_and_entropy
from kernels_triton import xent_kernels as K
from kernels_triton import xent_launch as L
from kernels_triton import xent_reduce as R
from kernels_triton.cross_entropy import _count

pytestmark = pytest.mark.filterwarnings(
    "ignore:invalid value encountered:RuntimeWarning",
    "ignore:divide by zero:RuntimeWarning",
    "ignore:overflow encountered:RuntimeWarning",
)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
IGNORE = -100


@pytest.fixture(params=["one_pass", "looped"])
def path(request, monkeypatch):
    whole = 1 if request.param == "looped" else 4096
    monkeypatch.setattr(L, "ROW_SHAPES", {k: (whole, 32, 4) for k in (2, 4, 8)})
    L.choose.cache_clear()  # choose() caches by (n, dtype): the shapes just set must be the ones read
    assert L.choose(64, 4)[1] == (request.param == "one_pass")
    yield request.param
    L.choose.cache_clear()


@pytest.fixture(autouse=True)
def poisoned(monkeypatch):
    empty = torch.empty

    def poisoned_empty(*args, **kwargs):
        t = empty(*args, **kwargs)
        return t.fill_(float("nan")) if t.is_floating_point() else t.fill_(-7)

    monkeypatch.setattr(torch, "empty", poisoned_empty)


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


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_loss_and_gradient_match_float64(path, dtype, eps, reduction):
    x, t = logits_and_targets(8, 70, dtype)
    check(x, t, reduction, eps)
    x, t = logits_and_targets(6, 70, dtype, seed=1, special=False)  # finite: the mean and sum are too
    check(x, t, reduction, eps)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_float64_to_the_last_bits(path, reduction):
    x, t = logits_and_targets(6, 50, torch.float64, special=False)
    t[2] = IGNORE
    check(x, t, reduction, 0.25)


def test_upstream_gradient_of_one_and_a_second_backward(path):
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


def test_count_and_loss_summed_over_chunks(path):
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


def test_inplace_backward_writes_the_gradient_over_the_logits(path):
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


def test_inplace_backward_over_strided_logits_with_an_upstream_gradient(path):
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
def test_batch_invariant(path, dtype, v):
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


def test_splits_follow_the_first_tensors_16_byte_offsets():
    """splits(): ALIGN as align(); no split for rows of whole packs from 16-byte boundaries; else VEC elements a
    pack, OFF the first tensor's base offset, LIKE where every tensor's rows sit as its do."""
    whole = torch.zeros(4, 64)
    assert L.splits(64, [whole, whole]) == (0, {"ALIGN": 4, "VEC": 0, "LIKE": True})
    odd = torch.zeros(4, 77, dtype=torch.bfloat16)
    assert L.splits(77, [odd, torch.zeros_like(odd)]) == (0, {"ALIGN": 1, "VEC": 8, "LIKE": True})
    shifted = placed(torch.zeros(4, 64), 3)  # whole packs, but the base 12 bytes past a boundary
    assert L.splits(64, [shifted]) == (3, {"ALIGN": 4, "VEC": 4, "LIKE": True})
    assert L.splits(64, [shifted, whole]) == (3, {"ALIGN": 4, "VEC": 4, "LIKE": False})
    wide = placed(torch.zeros(4, 77), 0, stride=80)  # every row at a boundary, the grad's not
    assert L.splits(77, [wide, torch.zeros(4, 77)]) == (0, {"ALIGN": 1, "VEC": 4, "LIKE": False})
    assert L.splits(77, [wide, placed(torch.zeros(4, 77), 0, stride=84)])[1]["LIKE"]
    one = placed(torch.zeros(1, 77), 2)  # one row: its stride does not matter
    assert L.splits(77, [one, placed(torch.zeros(1, 77), 2, stride=99)]) == (
        2,
        {"ALIGN": 1, "VEC": 4, "LIKE": True},
    )


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


@pytest.mark.parametrize("dtype,v", [(torch.float32, 77), (torch.bfloat16, 77), (torch.bfloat16, 70),
                                     (torch.float64, 77)])  # fmt: skip
def test_rows_off_16_byte_boundaries_at_every_offset(path, dtype, v):
    """Rows not whole 16-byte packs split into head, body and tail by where they start, the
    base at every offset from a boundary, the rows unpadded (each row at its own offset),
    padded to whole packs (all at the base's) or padded to an odd stride (the gradient then
    laid out unlike the logits: LIKE false), against float64; with label smoothing, by a
    reduction that writes the gradient in the forward (its loss is NaN: rows 3 and 4) and by
    one that recomputes it and checks every row's loss."""
    vec = 16 // torch.empty((), dtype=dtype).element_size()
    x, t = odd_rows(12, v, dtype)
    check_every_offset(x, t, v, vec)


@pytest.mark.parametrize("v", [2, 3, 9])
def test_rows_shorter_than_a_head_and_a_tail(path, v):
    """Rows of fewer elements than a pack, or than a head and a tail (bf16: 8 a pack), at
    every offset: head and tail overlap the row's end, the body is empty or one pack."""
    x, t = logits_and_targets(5, v, torch.bfloat16, special=False)
    for off in range(8):
        check(x, t, ("none", "sum")[off % 2], 0.1, layout=lambda x, off=off: placed(x, off, v + off))


def test_inplace_backward_at_an_odd_offset(path):
    """inplace_backward over rows split by their offsets: the gradient lands over the logits."""
    x, t = odd_rows(12, 77, torch.float32)
    x64 = x.double().requires_grad_()
    F.cross_entropy(x64, t, ignore_index=IGNORE, label_smoothing=0.1).backward()
    xa = placed(x, 1, stride=79).requires_grad_()
    cross_entropy(xa, t, ignore_index=IGNORE, label_smoothing=0.1, inplace_backward=True).backward()
    torch.testing.assert_close(xa.grad.double(), x64.grad, rtol=2e-6, atol=1e-8, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_row_at_a_boundary_splits_as_the_plain_tiles(path, dtype):
    """A row of whole packs at offset 0 has no head and no tail: the split (its tensor's
    stride is odd) gives the plain tiles' bits (the tensor is whole packs, no split)."""
    x, t = logits_and_targets(9, 64, dtype, special=False)
    plain = cross_entropy(x, t, reduction="none", label_smoothing=0.1)
    split = placed(x, 0, stride=65)  # row i at offset i mod 16 bytes' elements
    assert L.splits(64, [split])[1]["VEC"] > 0 and L.splits(64, [x])[1]["VEC"] == 0
    got = cross_entropy(split, t, reduction="none", label_smoothing=0.1)
    vec = 16 // x.element_size()
    assert torch.equal(got[::vec], plain[::vec])


def test_short_rows_go_many_a_program_chosen_by_n_and_dtype_alone(monkeypatch):
    """ce_shape's ROWS is a function of (N, dtype): the launch for 1 row and for many uses
    the same; rows in every slot of a [ROWS, BLOCK] tile, over several programs with a ragged
    last one, match float64 and give the same bits alone as in the batch."""
    ce = importlib.import_module("kernels_triton.cross_entropy")  # the package exports the function
    assert ce.ce_shape(128, 4)[2] > 1 and ce.ce_shape(128, 2)[2] > 1 and ce.ce_shape(50257, 2)[2] == 1
    seen = []
    launch = K.cross_entropy_fwd

    class Spy:
        def __getitem__(self, grid):
            def run(*args, **meta):
                seen.append(meta["ROWS"])
                return launch[grid](*args, **meta)

            return run

    monkeypatch.setattr(K, "cross_entropy_fwd", Spy())
    block, _, rows, _ = ce.ce_shape(40, 4)
    assert rows == ce.ROW_TILE // block > 1
    m = 3 * rows + 5  # three full programs' worth and a ragged last block
    x, t = logits_and_targets(m, 40, torch.float32)
    check(x, t, "sum", 0.1)
    batch = cross_entropy(x, t, reduction="none")
    for i in (6, rows - 1, rows, m - 1):
        assert torch.equal(cross_entropy(x[i : i + 1], t[i : i + 1], reduction="none"), batch[i : i + 1])
    assert set(seen) == {rows}


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


@pytest.mark.parametrize(
    "dtype,v", [(torch.float32, 128), (torch.float32, 600), (torch.float32, 1024), (torch.bfloat16, 256),
                (torch.bfloat16, 600), (torch.bfloat16, 2048)],
)  # fmt: skip
def test_short_rows_of_whole_packs_a_warp_a_row(monkeypatch, dtype, v):
    """Rows of whole 16-byte packs, 1 to 8 packs of 32 lanes a row, take the warp-rows kernel
    (xent_warp_rows): against float64 with the special rows, label smoothing and every
    reduction, an odd row count (the last program half past M); the gradient the forward
    writes is, bit for bit, the recompute's from the same statistics; a row's bits alone are
    its bits in the batch."""
    from kernels_triton import xent_warp_rows as W

    seen = launched_kernels(monkeypatch)
    x, t = logits_and_targets(7, v, dtype)
    for reduction, eps in (("mean", 0.0), ("sum", 0.1), ("none", 0.0)):
        check(x, t, reduction, eps)
    assert W.cross_entropy_warp_rows in seen and K.cross_entropy_fwd not in seen
    x, t = logits_and_targets(7, v, dtype, seed=3, special=False)
    assert_forward_gradient_is_the_recompute(x, t)
    batch = cross_entropy(x, t, reduction="none")
    for i in (0, 6):
        assert torch.equal(cross_entropy(x[i : i + 1], t[i : i + 1], reduction="none"), batch[i : i + 1])


@pytest.mark.parametrize("reduction,m", [("mean", 5), ("sum", 5), ("sum", 0), ("none", 5)])
def test_launches_a_call_makes(monkeypatch, reduction, m):
    """count_targets runs where its count is read, the mean's divisor, and for an empty sum, whose
    forward does not run to zero reduce_loss's ticket (a sum's forward zeroes it). The backward of
    a 16-bit loss hands scale_unless_one dloss in the loss's own dtype: no conversion first."""
    module = importlib.import_module("kernels_triton.cross_entropy")
    x = torch.randn(m, 600, dtype=torch.bfloat16, device=DEVICE, requires_grad=True)
    t = torch.randint(0, 600, (m,), device=DEVICE)
    seen, launch = [], module.launch

    def spy(kernel, grid, args, *rest, **constexprs):
        seen.append((kernel, args))
        launch(kernel, grid, args, *rest, **constexprs)

    monkeypatch.setattr(module, "launch", spy)
    loss = cross_entropy(x, t, reduction=reduction)
    kernels = [k for k, _ in seen]
    assert (R.count_targets in kernels) == (reduction == "mean" or not m), kernels
    torch.testing.assert_close(loss.float(), F.cross_entropy(x.detach().float(), t, reduction=reduction),
                               rtol=1e-2, atol=1e-2, equal_nan=True)  # fmt: skip
    if reduction != "none" and m:
        seen.clear()
        loss.backward()
        (dloss,) = [args[1] for k, args in seen if k is K.scale_unless_one]
        assert dloss.dtype == torch.bfloat16 and [k for k, _ in seen] == [K.scale_unless_one]


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


# --- per-token log-probability and entropy -------------------------------------------------


def token_reference(x, t):
    logp = F.log_softmax(x, -1)
    p = logp.exp()
    ent = -(p * torch.where(p > 0, logp, 0)).sum(-1)
    lp_t = logp.gather(1, t.clamp(min=0)[:, None])[:, 0]
    return torch.where(t == IGNORE, 0, lp_t), ent


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_token_logprobs_and_entropy(path, dtype):
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
def test_token_stats_of_rows_off_16_byte_boundaries(path, dtype):
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


COMPILE = """
import json, torch, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kernels_triton import xent_kernels as K
from kernels_triton import xent_launch as L
from kernels_triton.cross_entropy import ce_shape
from sass_tools import memory_instructions, resources, sass
n, ty, kernel = {n}, "{ty}", "{kernel}"
dtype = dict(bf16=torch.bfloat16, fp32=torch.float32)[ty]
itemsize = dtype.itemsize
rows = [torch.empty((4096, n), dtype=dtype, device="meta")] * 2  # contiguous logits and gradient
off, split = L.splits(n, rows)
block, one_pass, nrows, warps = ce_shape(n, itemsize)
meta = dict(BLOCK=block, **split, IS_FP64=False, SMOOTH=0.0, MEAN=True)
if kernel == "fwd":
    fn = K.cross_entropy_fwd
    meta.update(ONE_PASS=one_pass, WRITE_GRAD=True, ROWS=nrows, ZERO_TICKET=False)
else:  # the recompute, as cross_entropy._backward launches it
    fn = K.cross_entropy_bwd
    meta.update(BLOCK=min(block, L.ROW_SHAPES[itemsize][1]), PER_ROW=False)
ptrs = dict(X="*" + ty, T="*i64", LOSS="*fp32", STATS="*fp32", G="*" + ty, COUNT="*i32", DLOSS="*fp32")
ints = dict(M=4096, N=n, stride_x=n, stride_g=n, OFF=off, ignore_index=-100)
sig, attrs = {{}}, {{}}
for i, a in enumerate(fn.arg_names):  # as a launch specialises: integers divisible by 16 marked so
    sig[a] = ptrs.get(a, "constexpr" if a in meta else "i32")
    if a in ptrs or (a in ints and ints[a] % 16 == 0):
        attrs[(i,)] = [["tt.divisibility", 16]]
c = triton.compile(ASTSource(fn, sig, constexprs=meta, attrs=attrs), target=GPUTarget("cuda", 90, 32),
                   options={{"num_warps": warps}})
print(json.dumps({{"one_pass": one_pass, "rows": nrows, "VEC": split["VEC"], **resources(c),
                  **memory_instructions(sass(c))}}))
"""


def test_compiled_for_a_gpu_the_rows_are_16_byte_vectors(without_interpreter):
    """Compiled for sm_90 (no GPU needed): the looped cross-entropy forward on aligned bf16 rows
    of 128256 loads and stores 16-byte vectors and spills nothing (registers leave room for
    two programs an SM)."""
    got = without_interpreter(COMPILE.format(n=128256, ty="bf16", kernel="fwd"))
    assert got["one_pass"] is False and got["VEC"] == 0 and got["stack"] == 0 and got["registers"] <= 64, got
    assert got.get("LDG.E.EL.128") and got.get("LDG.E.EF.128") and got.get("STG.E.EF.128"), got
    # 2-byte accesses: only the target's logit (LDG.E.U16), never a tile of the row
    assert not any(k in got for k in ("LDG.E.EL.U16", "LDG.E.EF.U16", "STG.E.U16", "STG.E.EF.U16")), got


@pytest.mark.parametrize("ty,scalar,kernel", [("bf16", "U16", "bwd"), ("fp32", "", "fwd")])
def test_compiled_odd_rows_move_their_bodies_as_16_byte_vectors(without_interpreter, ty, scalar, kernel):
    """GPT-2's rows of 50257, contiguous (each row at its own offset from a 16-byte boundary),
    compiled for sm_90: the split's body loads and stores 16-byte vectors in both passes of the
    forward and in the recompute; element accesses are the edges' and the target's alone (one
    instruction each: one lane a thread); no spills, registers for two programs an SM."""
    got = without_interpreter(COMPILE.format(n=50257, ty=ty, kernel=kernel))
    assert got["one_pass"] is False and got["VEC"] == 16 // (2 if ty == "bf16" else 4), got
    assert got["stack"] == 0 and got["registers"] <= 64, got

    def element(op):  # an element's access: LDG.E.U16 (bf16), LDG.E (fp32)
        return f"{op}.{scalar}" if scalar else op

    if kernel == "fwd":
        assert got.get("LDG.E.EL.128") and got.get("LDG.E.EF.128") and got.get("STG.E.EF.128"), got
        assert element("LDG.E.EF") not in got and element("STG.E.EF") not in got, got  # pass 2's tiles
        # pass 1's edges (evict_last); pass 2's edges and their store (fp32: and the 3 statistics)
        assert got.get(element("LDG.E.EL")) == 1 and got.get(element("STG.E")) <= 4, got
    else:
        assert got.get("LDG.E.128") and got.get("STG.E.128"), got
        assert got.get(element("STG.E"), 0) <= 2, got


COMPILE_LOOPED = """
import json, torch, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kernels_triton import xent_kernels as K
from kernels_triton import xent_launch as L
from kernels_triton import token_logprobs as T
from sass_tools import memory_instructions, sass
ty = "{ty}"
dtype = dict(bf16=torch.bfloat16, fp32=torch.float32)[ty]
_, block, warps = L.ROW_SHAPES[dtype.itemsize]
kernels = ["log_softmax_fwd", "log_softmax_bwd", "cross_entropy_fwd", "cross_entropy_bwd", "token_stats_fwd",
           "token_stats_bwd"]
stats = ("LOSS", "STATS", "DLOSS", "LOGP", "ENT", "DLOGP", "DENT")
got = {{}}
for name in kernels:
    fn = getattr(K, name, None) or getattr(T, name)
    for like in (True, False) if "LIKE" in fn.arg_names else (True,):
        meta = dict(BLOCK=block, ALIGN=1, VEC=16 // dtype.itemsize, LIKE=like, ONE_PASS=False, IS_FP64=False,
                    SMOOTH=0.1, MEAN=True, WRITE_GRAD=True, ROWS=1, PER_ROW=False, ZERO_TICKET=False)
        meta = {{a: v for a, v in meta.items() if a in fn.arg_names}}
        sig, attrs = {{}}, {{}}
        for i, a in enumerate(fn.arg_names):  # the first tensor based off a 16-byte boundary (OFF = 3)
            if a in meta:
                sig[a] = "constexpr"
            elif a in ("T", "COUNT"):
                sig[a], attrs[(i,)] = "*i64" if a == "T" else "*i32", [["tt.divisibility", 16]]
            elif a in stats:
                sig[a], attrs[(i,)] = "*fp32", [["tt.divisibility", 16]]
            elif a in ("X", "Y"):
                sig[a] = "*" + ty
            elif a.isupper() and a not in ("M", "N", "OFF"):
                sig[a], attrs[(i,)] = "*" + ty, [["tt.divisibility", 16]]
            else:  # M = 4095, N = 50257, strides 50257, OFF = 3: none divisible by 16
                sig[a] = "i32"
        c = triton.compile(ASTSource(fn, sig, constexprs=meta, attrs=attrs), target=GPUTarget("cuda", 90, 32),
                           options={{"num_warps": warps}})
        got[f"{{name}} LIKE={{like}}"] = memory_instructions(sass(c))
print(json.dumps(got))
"""


@pytest.mark.parametrize("ty", ["bf16"])  # fp32's odd-row vectors: test_compiled_odd_rows_move_...
def test_compiled_every_looped_kernel_on_odd_rows(without_interpreter, ty):
    """Every looped kernel (log_softmax, cross-entropy and its recompute, token stats; forward
    and backward) compiles for sm_90 on rows of 50257 split into head, body and tail (VEC > 0),
    with the other tensors laid out like the first (LIKE) or not: the interpreter never compiles,
    so a kernel that does not (a loop-carried name retyped in the loop) fails here, without a GPU.
    The first tensor's base is off a 16-byte boundary (OFF = 3), and still its body loads are
    16-byte vectors: the register layout of its tiles, and so the order of its row sums, is the
    one a batch at a boundary gets, so a row's bits are the same alone as in the batch."""
    got = without_interpreter(COMPILE_LOOPED.format(ty=ty))
    assert len(got) == 11, got
    for kernel, ops in got.items():
        assert any(op.startswith("LDG") and op.endswith(".128") for op in ops), (kernel, ops)


@pytest.mark.parametrize("n", [128, 600])
@pytest.mark.parametrize("itemsize,ty", [(2, "bf16"), (4, "fp32")])
def test_compiled_short_rows_load_16_byte_vectors(without_interpreter, itemsize, ty, n):
    """The one-pass tile (short rows that are not whole 16-byte packs, or shorter than 32 of
    them): rows of 128, several a program ([ROWS, BLOCK] tiles), and of 600, one a program,
    load and store 16-byte vectors and spill nothing."""
    got = without_interpreter(COMPILE.format(n=n, ty=ty, kernel="fwd"))
    assert got["one_pass"] is True and (got["rows"] > 1) == (n == 128) and got["stack"] == 0, got
    assert got.get("LDG.E.128") and got.get("STG.E.128"), got


COMPILE_WARP_ROWS = """
import json, torch, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kernels_triton import xent_warp_rows as W
from sass_tools import memory_instructions, resources, sass
n, ty = {n}, "{ty}"
width, packs, full, rows = W.shape(n, dict(bf16=2, fp32=4)[ty])
fn = W.cross_entropy_warp_rows
meta = dict(WIDTH=width, PACKS=packs, FULL=full, ROWS=rows, ALIGN=16 // dict(bf16=2, fp32=4)[ty], SMOOTH=0.0,
            WRITE_GRAD=True, MEAN=True, ZERO_TICKET=False)
ptrs = dict(X="*" + ty, T="*i64", LOSS="*fp32", STATS="*fp32", G="*" + ty, COUNT="*i32")
ints = dict(M=4096, N=n, stride_x=n, stride_g=n, ignore_index=-100)
sig = {{a: ptrs.get(a, "constexpr" if a in meta else "i32") for a in fn.arg_names}}
attrs = {{(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names)
          if a in ptrs or (a in ints and ints[a] % 16 == 0)}}
c = triton.compile(ASTSource(fn, sig, constexprs=meta, attrs=attrs), target=GPUTarget("cuda", 90, 32),
                   options={{"num_warps": rows}})
print(json.dumps({{"packs": packs, **resources(c), **memory_instructions(sass(c))}}))
"""


@pytest.mark.parametrize("n,ty", [(600, "bf16"), (600, "fp32"), (2048, "bf16")])
def test_compiled_warp_rows_move_16_byte_vectors(without_interpreter, n, ty):
    """The warp-rows kernel compiled for sm_90: every pack, the last one (partly past the row)
    too, is one 16-byte load and one store a lane (its mask is constant over runs of a pack:
    ALIGN), and nothing spills at 8 packs a lane."""
    got = without_interpreter(COMPILE_WARP_ROWS.format(n=n, ty=ty))
    assert got["stack"] == 0, got
    # a 16-byte load and store a pack (the other accesses are scalars: targets, x[t], the row's stats)
    assert got.get("LDG.E.128") == got["packs"] and got.get("STG.E.128") == got["packs"], got


COMPILE_REDUCE = """
import json, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kernels_triton import xent_reduce as R
from kernels_triton.cross_entropy import _REDUCE_BLOCK
from sass_tools import resources
got = {{}}
for fn, sig in ((R.count_targets, dict(T="*i64", COUNT="*i32", M="i32", ignore_index="i32")),
                (R.reduce_loss, dict(LOSS="*fp32", COUNT="*i32", PART="*fp32", OUT="*bf16", M="i32"))):
    meta = {{a: v for a, v in dict(BLOCK=_REDUCE_BLOCK, MEAN=True).items() if a in fn.arg_names}}
    attrs = {{(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names) if sig.get(a, "")[:1] == "*"}}
    c = triton.compile(ASTSource(fn, sig | dict.fromkeys(meta, "constexpr"), constexprs=meta, attrs=attrs),
                       target=GPUTarget("cuda", 90, 32), options={{"num_warps": 8}})
    ptx = c.asm["ptx"]
    store, ticket = ptx.find("st.global"), ptx.find("atom.global.gpu.acq_rel.add")
    got[fn.__name__] = dict(**resources(c), ordered=-1 < store < ticket < ptx.find("ld.volatile.global"),
                            barrier="bar.sync" in ptx[store:ticket])
print(json.dumps(got))
"""


def test_compiled_reductions_order_the_partials_before_the_ticket(without_interpreter):
    """xent_reduce's kernels compile for sm_90 without spills (the interpreter never compiles),
    and reduce_loss's last program can see every partial: its own partial is stored, and the
    program's threads meet at a barrier, before the acq_rel ticket; the partials are read after
    it, volatile (from L2)."""
    got = without_interpreter(COMPILE_REDUCE.format())
    assert all(k["stack"] == 0 for k in got.values()), got
    assert got["reduce_loss"]["ordered"] and got["reduce_loss"]["barrier"], got


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
def test_gpu_odd_rows_at_every_16_byte_offset(dtype):
    """GPT-2's rows of 50257 (head, body of 16-byte packs, tail), the base at every offset from
    a 16-byte boundary, unpadded, padded to whole packs and padded to an odd stride (the
    gradient laid out unlike the logits), extremes at the edges, against float64; and a row's
    bits alone at its offset as in the contiguous batch."""
    v, vec = 50257, 16 // torch.empty((), dtype=dtype).element_size()
    x, t = odd_rows(64, v, dtype)
    check_every_offset(x, t, v, vec)
    x, t = logits_and_targets(257, v, dtype, special=False)
    batch = cross_entropy(x, t, reduction="none")
    xb = x.clone().requires_grad_()
    cross_entropy(xb, t, reduction="sum").backward()
    for i in (0, 1, 3, 7, 200, 256):
        xi = placed(x[i : i + 1], i * v % vec).requires_grad_()
        alone = cross_entropy(xi, t[i : i + 1], reduction="none")
        cross_entropy(xi, t[i : i + 1], reduction="sum").backward()
        assert torch.equal(alone, batch[i : i + 1]) and torch.equal(xi.grad, xb.grad[i : i + 1])


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
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("v", [16385, 32000, 50257, 131073, 151936, 163839])
def test_gpu_long_rows_over_a_cluster(monkeypatch, v, dtype):
    """Rows too long for one program's registers, without label smoothing, take the cluster
    kernel on sm_90 (one read of the logits): against float64 with the special rows; a target
    out of range gives NaN; a row's bits alone are its bits in the batch; the gradient the
    forward writes is, bit for bit, the recompute's from the same statistics, and in place."""
    from kernels_triton import cluster, xent_cluster

    if not cluster.applies("fwd", 1, v, dtype, torch.device("cuda"), L.looped_from(dtype.itemsize)):
        pytest.skip("the cluster kernels need sm_90")
    seen = launched_kernels(monkeypatch)
    x, t = logits_and_targets(67, v, dtype)
    check(x, t, "mean", 0.0)
    check(x, t, "sum", 0.0, dloss_scale=1.0)
    assert xent_cluster.cluster_xent_kernel in seen
    bad = t[6:7] + v
    assert cross_entropy(x[6:7], bad, reduction="none").isnan().all()
    x, t = logits_and_targets(67, v, dtype, seed=3, special=False)
    batch = cross_entropy(x, t, reduction="none")
    for i in (0, 31, 66):
        assert torch.equal(cross_entropy(x[i : i + 1], t[i : i + 1], reduction="none"), batch[i : i + 1])
    assert_forward_gradient_is_the_recompute(x, t)
    xi = x.clone().requires_grad_()
    loss = cross_entropy(xi, t, inplace_backward=True)
    loss.backward()
    xm = x.clone().requires_grad_()
    cross_entropy(xm, t).backward()
    assert torch.equal(xi.grad, xm.grad)


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
