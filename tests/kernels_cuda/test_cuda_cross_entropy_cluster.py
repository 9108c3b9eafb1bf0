"""kernels_cuda.cross_entropy's long rows over a thread-block cluster (cuda/11_cross_entropy_cluster.cu,
sm_90): the forward of a row 09 takes in steps (a block a row), without label smoothing or
entropy, a row held in the registers of a cluster of up to 16 blocks.

CPU: the plan (rk.xent_cluster) from (N, dtype) alone, holding every row it takes, None where 09
keeps the row; every cluster kernel compiles with NVRTC for sm_90 with no spill and no local memory,
within four blocks an SM's registers (two for the longest rows), 16-byte (coherent) loads and
stores, the pairs exchanged by st.async on an mbarrier and no release cluster barrier; with launches
recorded instead of run (CPU tensors standing in for CUDA ones), the routing: 11 on sm_90 for long
rows without smoothing or entropy, 09 elsewhere.
GPU (marked `gpu`): against F.cross_entropy in float64 at the route's first row, 32000, 50257,
128256, the first row past 8 blocks of 8 packs a thread and the last of 8 blocks of 11, the last row
of 16 blocks of 8, the first and last of 16 blocks of 16, fp32 and bf16, every reduction;
adversarial rows (+inf, -inf entries, the target at -inf, logits near 1e4, a NaN row, a row all
-inf, an ignored target); targets out of range (NaN); targets on the chunks', the head's and the
tail's edges at every offset mod 16, the gradient's rows lined up with the logits' or not;
inplace_backward; a row alone gives the bits it has in the batch; these launches take 11.
Run: scripts/test-in-place tests/kernels_cuda/test_cuda_cross_entropy_cluster.py -m gpu
"""

from __future__ import annotations

import math
import re

import pytest
import torch
from cuda_xent_helpers import _at_offset, _close, _inputs, _ours, _reference
from kernels_cuda import arrays, codegen, compiler
from kernels_cuda import cross_entropy_op as ce
from kernels_cuda import row_kernels as rk
from kernels_cuda import xent_launch as xl

DTYPES = ("float32", "float16", "bfloat16")
FIRST = {"float32": 2049 * 4, "bfloat16": 2049 * 8}  # the first row 09 takes in steps
# the last row 16 blocks of 8 packs a thread hold, and of 16 packs
LAST = {"float32": 16 * 2048 * 4 + 3, "bfloat16": 16 * 2048 * 8 + 7}
LONGEST = {"float32": 16 * 4096 * 4 + 3, "bfloat16": 16 * 4096 * 8 + 7}
# the first row past 8 blocks of 8 packs a thread (8 blocks of 9), and the last of 8 blocks of 11
PAST8 = {"float32": 8 * 2048 * 4 + 4, "bfloat16": 8 * 2048 * 8 + 8}
WIDEST8 = {"float32": 8 * 2816 * 4 + 3, "bfloat16": 8 * 2816 * 8 + 7}
# (N, cluster size) at the bench's shapes
SHAPES = {
    "float32": ((32000, 4), (50257, 8), (128256, 16)),
    "bfloat16": ((32000, 2), (50257, 4), (128256, 8)),
}


# --- CPU ---------------------------------------------------------------------------------------


def test_the_cluster_plan_holds_every_row_it_takes():
    every = set(rk.specializations())
    for dtype in ("float32", "bfloat16"):
        vec = 16 // rk.ITEMSIZE[dtype]
        assert rk.xent_cluster(FIRST[dtype] - vec, dtype) is None  # one block's registers: 09
        assert rk.xent_cluster(FIRST[dtype], dtype).cluster == 2
        split = {N: (rk.xent_cluster(N, dtype).cluster, rk.xent_cluster(N, dtype).items)
                 for N in (PAST8[dtype] - vec, PAST8[dtype], WIDEST8[dtype], WIDEST8[dtype] + 1)}  # fmt: skip
        assert list(split.values()) == [(8, 8), (8, 9), (8, 11), (16, 7)]  # past 8 blocks of 11: 16 of fewer
        assert rk.xent_cluster(LAST[dtype], dtype).cluster == 16
        longer = rk.xent_cluster(LAST[dtype] + 1, dtype)  # past 16 blocks of 8: up to twice the packs
        assert longer.cluster == 16 and longer.items == min(i for i in rk.XENT_CLUSTER_ITEMS if i > 8)
        assert rk.xent_cluster(LONGEST[dtype], dtype).items == 16
        assert rk.xent_cluster(LONGEST[dtype] + 1, dtype) is None  # past those: 09
        for N, c in SHAPES[dtype]:
            plan = rk.xent_cluster(N, dtype)
            assert plan.cluster == c and plan.vec == vec, (N, dtype)
            assert rk.xent_cluster(N, dtype, smoothing=0.1) is None
            assert rk.xent_cluster(N, dtype, entropy=True) is None
        for N in range(FIRST[dtype], LONGEST[dtype] + 1, 997):
            plan = rk.xent_cluster(N, dtype)
            assert plan.cluster * plan.chunk >= N // vec  # every pack of the body has a block
            assert plan.chunk <= plan.items * rk.XENT_CLUSTER_THREADS  # and fits its registers
            # the fewest packs a thread of the ladder that hold the chunk, never past the split's most
            fewest = min(i for i in rk.XENT_CLUSTER_ITEMS if i * rk.XENT_CLUSTER_THREADS >= plan.chunk)
            assert (
                plan.items == fewest <= max(most for c, most in rk.XENT_CLUSTER_SPLITS if c == plan.cluster)
            )
            assert plan.spec(dtype) in every
    assert rk.xent_cluster(50257, "float64") is None


def test_the_cluster_kernels_compile_for_sm90_without_spills_within_four_blocks_an_sm(
    offline_cache, monkeypatch
):
    monkeypatch.setenv(codegen.CACHE_ENV, str(offline_cache))
    monkeypatch.setattr(compiler, "_compiled", {})
    specs = [s for d in DTYPES for s in rk.every_xent_cluster_spec(d)]
    splits = {(dict(s.constants)["CLUSTER"], dict(s.constants)["ITEMS"]) for s in specs}
    assert {c for c, _ in splits} == {c for c, _ in rk.XENT_CLUSTER_SPLITS} and set(
        rk.XENT_CLUSTER_SPLITS
    ) <= splits
    assert {i for _, i in splits} == set(rk.XENT_CLUSTER_ITEMS)
    registers: dict[tuple, dict[int, int]] = {}
    for r in codegen.compile_all(("sm_90",), specs):
        name, ptx, constants = r.spec.name, r.ptx_path.read_text(), dict(r.spec.constants)
        assert r.resources is None or not (r.resources.spill_bytes or r.resources.stack_bytes), name
        per_sm = 4 if constants["ITEMS"] <= 8 else 2  # blocks sharing an SM's 64K registers
        assert r.resources is None or r.resources.registers * rk.XENT_CLUSTER_THREADS * per_sm <= 65536, name
        if r.resources is not None:
            registers.setdefault((r.spec.dtype, constants["CLUSTER"]), {})[constants["ITEMS"]] = (
                r.resources.registers
            )
        assert ".local" not in ptx and "st.global.v4.b32" in ptx, name
        # x through the coherent path, 16 bytes a load: grad may be x itself (inplace)
        assert "ld.global.v4.u32" in ptx and "ld.global.nc.v4" not in ptx, name
        assert "st.async.shared::cluster.mbarrier::complete_tx::bytes" in ptx, name
        assert "mbarrier.try_wait.parity.acquire.cluster" in ptx, name
        assert not re.search(r"barrier\.cluster\.arrive\.release|ld\.shared::cluster", ptx), name
    for key, by_items in registers.items():  # a thread holding fewer packs never takes more registers
        counts = [by_items[i] for i in sorted(by_items)]
        assert counts == sorted(counts), (key, by_items)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_long_rows_without_smoothing_take_the_cluster_kernel_on_sm90(recorded, dtype, monkeypatch):
    M = 5
    for N, c in SHAPES[dtype]:
        x = torch.randn(M, N).to(getattr(torch, dtype)).requires_grad_()
        t = torch.randint(0, N, (M,))
        for reduction in ce.REDUCTIONS:
            recorded.clear()
            ce.cross_entropy(x, t, reduction=reduction)
            forward = [r for r in recorded if "forward" in r[0]]
            assert [(k, g, b) for k, _, _, g, b in forward] == [("cross_entropy_cluster_forward", M * c, 256)]
            assert forward[0].spec == rk.xent_cluster(N, dtype).spec(dtype)
        # label smoothing and the entropy stay on 09
        for smoothing, entropy in ((0.1, False), (0.0, True)):
            recorded.clear()
            if entropy:
                ce.token_logprobs_and_entropy(x.detach(), t)
            else:
                ce.cross_entropy(x, t, label_smoothing=smoothing)
            assert "cross_entropy_cluster_forward" not in [k for k, *_ in recorded]
    recorded.clear()
    ce.cross_entropy(torch.randn(M, 600).to(getattr(torch, dtype)), torch.randint(0, 600, (M,)))
    assert "cross_entropy_forward" in [k for k, *_ in recorded]  # rows in one block's registers: 09
    monkeypatch.setattr(codegen, "device_arch", lambda device_id: "sm_80")  # no clusters: 09
    monkeypatch.setattr(xl, "_runs", {})
    recorded.clear()
    ce.cross_entropy(x, t)
    assert "cross_entropy_forward" in [k for k, *_ in recorded]


# --- GPU ---------------------------------------------------------------------------------------


def _routes(dtype: str) -> list[int]:
    return [FIRST[dtype], 32000, 50257, 128256, PAST8[dtype], WIDEST8[dtype], LAST[dtype], LAST[dtype] + 1,
            LONGEST[dtype]]  # fmt: skip


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("reduction", ce.REDUCTIONS)
def test_loss_and_gradient_match_float64_reference(dtype, reduction):
    for V in _routes(dtype):
        M = 13 if V < 100_000 else 5
        x, t = _inputs(M, V, dtype, seed=V + M)
        loss, grad = _ours(x, t, reduction=reduction)
        ref_loss, ref_grad = _reference(x, t, reduction=reduction)
        assert loss.dtype == x.dtype and loss.shape == ref_loss.shape
        _close(loss, ref_loss, dtype, f"loss {M}x{V} {reduction}")
        top = ref_grad.abs().max()
        _close(grad / top, ref_grad / top, dtype, f"gradient {M}x{V} {reduction}")


def _adversarial(V: int, dtype: str, seed: int):
    x, t = _inputs(10, V, dtype, seed=seed, ignored=0.0)
    x, t = x.double().cpu(), t.cpu()
    x[0, 3] = math.inf  # +inf: the row's loss and gradient are NaN
    x[1, t[1]] = -math.inf  # the target at -inf: loss +inf
    x[2, ::2] = -math.inf  # masked half of the vocabulary
    x[3, 7] = math.nan  # a NaN: the row NaN
    x[4] += 1e4  # logits near 1e4
    x[5] = -math.inf  # all -inf: NaN
    t[6] = -100  # ignored: loss 0, gradient 0
    x[7, t[7]] = x[7].max() + 100  # confident and right
    x[8, V - 1] = -math.inf  # one -inf, in the tail or the last chunk
    return x.to(getattr(torch, dtype)).cuda(), t.cuda()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_adversarial_rows(dtype):
    for V in (32000, 50257):
        x, t = _adversarial(V, dtype, seed=V)
        for reduction in ce.REDUCTIONS:
            loss, grad = _ours(x, t, reduction=reduction)
            ref_loss, ref_grad = _reference(x, t, reduction=reduction)
            _close(loss, ref_loss, dtype, f"adversarial loss {V} ({reduction})")
            _close(grad, ref_grad, dtype, f"adversarial gradient {V} ({reduction})")
            assert torch.equal(grad[6], torch.zeros_like(grad[6])), "an ignored row's gradient must be 0"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_targets_out_of_range_give_nan_rows(dtype):
    x, t = _inputs(6, 50257, dtype, seed=31, ignored=0.0)
    t[2], t[4] = 50257, -7
    bad = torch.tensor([False, False, True, False, True, False])
    loss = ce.cross_entropy(x, t, reduction="none")
    assert torch.equal(loss.isnan().cpu(), bad)
    _, grad = _ours(x, t, reduction="sum")
    assert bool(grad[bad.cuda()].isnan().all())
    kept = t.clone()
    kept[bad.cuda()] = -100  # the other rows as the reference gives them
    _, ref = _reference(x, kept, reduction="sum")
    _close(grad[~bad.cuda()], ref[~bad], dtype, "gradient of the rows in range")


def _edge_targets(x: torch.Tensor, plan) -> torch.Tensor:
    """Per row, a target on an edge of its split: the first and the last column, the last of
    block 0's chunk and the first of block 1's, the head's last, the tail's first (by row)."""
    vec, N = plan.vec, x.shape[1]
    out = []
    for i in range(x.shape[0]):
        off = x[i].data_ptr() % 16 // x.element_size()
        head = (vec - off) % vec
        end = head + (N - head) // vec * vec
        edges = [
            0,
            N - 1,
            head + plan.chunk * vec - 1,
            head + plan.chunk * vec,
            max(head - 1, 1),
            min(end, N - 1),
        ]
        out.append(edges[i % len(edges)])
    return torch.tensor(out, device=x.device)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_targets_on_every_edge_at_every_offset_mod_16(dtype):
    """Rows of odd length at every element offset mod 16 bytes (the head and the tail on the last
    block), the target on an edge of each; the gradient's rows lined up with the logits' (16-byte
    stores) and, at a stride other than V, not (element stores)."""
    V, vec = 50257, 16 // rk.ITEMSIZE[dtype]
    plan = rk.xent_cluster(V, dtype)
    for offset in range(vec):
        for stride in (None, V + 3):
            x, _ = _at_offset(12, V, dtype, offset, seed=7 * offset + 1, stride=stride)
            t = _edge_targets(x, plan)
            for reduction in ce.REDUCTIONS:
                loss, grad = _ours(x, t, keep_address=True, reduction=reduction)
                ref_loss, ref_grad = _reference(x, t, reduction=reduction)
                what = f"offset {offset}, stride {stride or V}, {reduction}"
                _close(loss, ref_loss, dtype, f"loss {what}")
                top = ref_grad.abs().max()
                _close(grad / top, ref_grad / top, dtype, f"gradient {what}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("offset", [0, 3])
def test_inplace_backward_writes_the_same_gradient_over_the_logits(dtype, offset):
    x, t = _at_offset(7, 50257, dtype, offset, seed=41)
    _, fresh = _ours(x, t, keep_address=True)
    xi = _at_offset(7, 50257, dtype, offset, seed=41)[0].detach().requires_grad_()  # the same address mod 16
    (g,) = torch.autograd.grad(ce.cross_entropy(xi, t, inplace_backward=True), xi)
    assert g.data_ptr() == xi.data_ptr(), "inplace_backward did not write over the logits"
    assert torch.equal(g, fresh), "inplace_backward changed the gradient"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("V", [50257, 128256])
def test_a_row_alone_gives_the_bits_it_has_in_the_batch(dtype, V):
    x, t = _inputs(24, V, dtype, seed=43, ignored=0.1)
    xg = x.clone().requires_grad_()
    with arrays.poison_outputs():
        (grad,) = torch.autograd.grad(ce.cross_entropy(xg, t, reduction="sum"), xg)
    rows = ce.cross_entropy(x, t, reduction="none")
    for i in (0, 1, 3, 11, 23):
        xi = xg[i : i + 1]
        with arrays.poison_outputs():
            alone = ce.cross_entropy(xi, t[i : i + 1], reduction="sum")
            (g_alone,) = torch.autograd.grad(alone, xi)
        assert torch.equal(alone, rows[i]), f"row {i}'s loss alone differs from its loss in the batch"
        assert torch.equal(g_alone[0], grad[i]), f"row {i}'s gradient alone differs from the batch's"


@pytest.mark.gpu
def test_these_launches_take_the_cluster_kernel(monkeypatch):
    seen = []
    real = rk.packed
    monkeypatch.setattr(rk, "packed", lambda spec, *a: seen.append(spec) or real(spec, *a))
    monkeypatch.setattr(xl, "_runs", {})
    for dtype in ("float32", "bfloat16"):
        for V in _routes(dtype):
            x, t = _inputs(3, V, dtype, seed=1)
            for reduction in ce.REDUCTIONS:
                seen.clear()
                _ours(x, t, reduction=reduction)
                forward = [s for s in seen if "forward" in s.kernel]
                assert forward == [rk.xent_cluster(V, dtype).spec(dtype)], (V, dtype, reduction, forward)
