"""kernels_triton.cross_entropy's rows: where each starts from a 16-byte boundary (head, body of
16-byte packs, tail), rows shorter than a pack, many rows a program, a warp a row, and the
kernels a call launches; each against float64 and bit for bit alone as in the batch.

Under Triton's interpreter without a GPU, on both paths (the `row_path` fixture); the `gpu`
tests add GPT-2's rows at every offset and the long rows over a cluster.
"""

from __future__ import annotations

import importlib

import pytest
import torch
import torch.nn.functional as F
from kernels_triton import cross_entropy
from kernels_triton import xent_kernels as K
from kernels_triton import xent_launch as L
from kernels_triton import xent_reduce as R
from xent_helpers import (
    DEVICE,
    FAMILY_MARKS,
    IGNORE,
    assert_forward_gradient_is_the_recompute,
    check,
    check_every_offset,
    launched_kernels,
    logits_and_targets,
    odd_rows,
    placed,
)

pytestmark = FAMILY_MARKS


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


@pytest.mark.parametrize("dtype,v", [(torch.float32, 77), (torch.bfloat16, 77), (torch.bfloat16, 70),
                                     (torch.float64, 77)])  # fmt: skip
def test_rows_off_16_byte_boundaries_at_every_offset(row_path, dtype, v):
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
def test_rows_shorter_than_a_head_and_a_tail(row_path, v):
    """Rows of fewer elements than a pack, or than a head and a tail (bf16: 8 a pack), at
    every offset: head and tail overlap the row's end, the body is empty or one pack."""
    x, t = logits_and_targets(5, v, torch.bfloat16, special=False)
    for off in range(8):
        check(x, t, ("none", "sum")[off % 2], 0.1, layout=lambda x, off=off: placed(x, off, v + off))


def test_inplace_backward_at_an_odd_offset(row_path):
    """inplace_backward over rows split by their offsets: the gradient lands over the logits."""
    x, t = odd_rows(12, 77, torch.float32)
    x64 = x.double().requires_grad_()
    F.cross_entropy(x64, t, ignore_index=IGNORE, label_smoothing=0.1).backward()
    xa = placed(x, 1, stride=79).requires_grad_()
    cross_entropy(xa, t, ignore_index=IGNORE, label_smoothing=0.1, inplace_backward=True).backward()
    torch.testing.assert_close(xa.grad.double(), x64.grad, rtol=2e-6, atol=1e-8, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_row_at_a_boundary_splits_as_the_plain_tiles(row_path, dtype):
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


# --- GPU ---------------------------------------------------------------------------------


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
