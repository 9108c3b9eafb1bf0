"""kernels_cuda.cross_entropy's reduced loss on the device (cuda/09_cross_entropy.cu:
cross_entropy_count and cross_entropy_reduce on PARTS blocks, a chunk of the rows each, and
cross_entropy_scale reading the upstream gradient where it lies) and the host path around them.

CPU: the three kernels compile with NVRTC for sm_90 and sm_80 in every dtype with no spill and
no local memory, the reduce fencing its partial before it takes its ticket and reading the
partials volatile; PARTS and the reduce's threads agree between 09, 11 and the host; the
workspace keeps every slot aligned and apart; with the launches recorded instead of run (CPU
tensors standing in for CUDA ones), a reduced loss's forward makes no torch op but its three
allocations and launches count (for the mean's gradient), forward and reduce on one workspace,
count and reduce on PARTS blocks, the ticket zeroed by the count where it runs and by the
forward otherwise, the mean without a gradient counted by the reduce; its backward makes no torch
op at all: one scale launch reading the forward's workspace, its slot alternating between calls.
GPU (marked `gpu`): mean, sum and none against F.cross_entropy in float64 in fp32, bf16 and fp64,
with and without a gradient, at M = 1 and at an M with rows in every chunk (not a multiple of
PARTS); every target ignored (mean NaN, sum 0); the same bits run to run; a bf16 loss's gradient
scaled by upstream gradients in its own dtype, backward after backward; at M around PARTS, past
65536 and past a round of every block's loads, in a NaN-poisoned workspace (a ticket nobody
zeroed shows), the reduced loss against the fp64 sum of the kernel's own row losses, the same bits
run to run and with or without a gradient (the count kernel's counts or the reduce's own).
Run: scripts/test-in-place tests/kernels_cuda/test_cuda_cross_entropy_reduce.py -m gpu
"""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from kernels_cuda import arrays, codegen, compiler
from kernels_cuda import cross_entropy_op as ce
from kernels_cuda import row_kernels as rk
from kernels_cuda import xent_launch as xl
from labtools.ops import tolerance
from torch.utils._python_dispatch import TorchDispatchMode

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float64": torch.float64}
PARTS = rk.REDUCE_PARTS
# rows in every chunk of the reduce, the last chunk short (M not a multiple of PARTS)
LARGE_M = 385 * PARTS + 13
# past a round of every block's loads (REDUCE_THREADS threads, 09's RU = 16 loads each)
ROUNDS_M = 3 * PARTS * rk.REDUCE_THREADS * 16 + 77


# --- CPU ---------------------------------------------------------------------------------------


def test_reduce_count_and_scale_compile_for_sm90_and_sm80_without_spills(offline_cache, monkeypatch):
    monkeypatch.setenv(codegen.CACHE_ENV, str(offline_cache))
    monkeypatch.setattr(compiler, "_compiled", {})
    specs = [rk.cross_entropy_spec(k, d, rk.scale_config(d)) for d in rk.DTYPES for k in rk.SCALAR_KERNELS]
    assert set(specs) <= set(rk.specializations())
    compiled = codegen.compile_all(("sm_90", "sm_80"), specs)
    assert {(r.spec, r.arch) for r in compiled} == {(s, a) for s in specs for a in ("sm_90", "sm_80")}
    for r in compiled:
        what = f"{r.spec.name} {r.arch}"
        assert r.resources is None or not (r.resources.spill_bytes or r.resources.stack_bytes), what
        assert ".local" not in r.ptx_path.read_text(), what
        if r.resources is not None and r.spec.kernel != "cross_entropy_scale":
            assert r.resources.registers * rk.REDUCE_THREADS <= 65536, what
        if r.spec.kernel == "cross_entropy_reduce":
            ptx = r.ptx_path.read_text()
            body = ptx[ptx.index(".entry cross_entropy_reduce") :]
            body = body[: body.find(".entry", 1)] if ".entry" in body[1:] else body
            # the partial stored, then a fence, then the ticket; the last block's reads from L2
            fence, ticket = body.index("membar.gl"), body.index("atom.global.add.u32")
            assert body.rindex("st.global.f64", 0, fence) < fence < ticket, what
            assert "ld.volatile.global.f64" in body[ticket:], what


def test_parts_and_the_reduce_threads_agree_between_the_kernels_and_the_host():
    for source in (rk.CROSS_ENTROPY_SOURCE, rk.CROSS_ENTROPY_CLUSTER_SOURCE):  # one PARTS, in the header
        assert '#include "loss_parts.cuh"' in (codegen.SOURCE_DIR / source).read_text(), source
        assert "constexpr int PARTS" not in (codegen.SOURCE_DIR / source).read_text(), source
    text = (codegen.SOURCE_DIR / "loss_parts.cuh").read_text()
    assert re.search(r"constexpr int PARTS = (\d+);", text)[1] == str(PARTS)
    assert re.search(r"constexpr int RT = (\d+),", text)[1] == str(rk.REDUCE_THREADS)


@pytest.mark.parametrize("size", [4, 8])
def test_the_workspace_keeps_every_slot_aligned_and_apart(size):
    for M in (1, 2, 3, PARTS - 1, PARTS, PARTS + 1, 1001):
        parts, counts, ticket, applied, numel = xl.workspace_layout(M, size)
        assert parts >= M * size and parts % 8 == 0  # fp64 partials past the rows' losses
        assert counts == parts + 8 * PARTS and counts % 4 == 0  # int32 counts
        # the ticket in the high half of an 8-byte word, where NaN poison is non-zero in fp64 too
        assert counts + 4 * PARTS <= ticket and ticket % 8 == 4
        # the applied pair last (run_scale reads it from the workspace's end)
        assert ticket + 4 <= applied and applied % 8 == 0 and applied == (numel - 2) * size


class _Ops(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.__name__)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_a_reduced_loss_costs_the_host_allocations_and_launches_alone(recorded, reduction):
    M, N = 37, 600
    x = torch.randn(M, N).requires_grad_()
    t = torch.randint(0, N, (M,))
    g = torch.tensor(1.0)
    for _ in range(2):  # the second call on launches made by the first
        recorded.clear()
        with _Ops() as ops:
            loss = ce.cross_entropy(x, t, reduction=reduction)
        assert loss.shape == () and loss.dtype == x.dtype
        assert ops.names == ["empty.memory_format"] * 3, ops.names  # gradient, workspace, loss
        kernels = [k for k, *_ in recorded]
        mean = reduction == "mean"
        assert kernels == ["cross_entropy_count"] * mean + ["cross_entropy_forward", "cross_entropy_reduce"]
        pointers = {k: p for k, p, *_ in recorded}
        fwd, red = pointers["cross_entropy_forward"], pointers["cross_entropy_reduce"]
        w = fwd[3]  # the workspace: the rows' losses first
        parts, counts, ticket, applied, _ = xl.workspace_layout(M, 4)
        assert fwd[2] == t.data_ptr() and fwd[4] == 0  # no lse kept for a reduced loss
        # the mean's gradient: the count runs first, zeroing the ticket; the sum: the forward zeroes it
        assert fwd[6:] == ((w + counts, 0) if mean else (0, w + ticket))
        assert red == (w, 0, w + counts if mean else 0, w + parts, w + ticket, loss.data_ptr(), w + applied)
        if mean:
            assert pointers["cross_entropy_count"] == (t.data_ptr(), w + counts, w + ticket)
        for launch in recorded:
            if launch.kernel in ("cross_entropy_count", "cross_entropy_reduce"):
                assert (launch.grid, launch.block) == (PARTS, rk.REDUCE_THREADS), launch.kernel
        for _ in range(2):  # a backward again through the graph uses the other slot
            recorded.clear()
            with _Ops() as ops:
                (grad,) = torch.autograd.grad(loss, x, g, retain_graph=True)
            assert ops.names == [], ops.names
            assert [(k, p) for k, p, *_ in recorded] == [
                ("cross_entropy_scale", (grad.data_ptr(), g.data_ptr(), red[6]))
            ]
        # the slot (a scalar of the packed launch) alternated: one packed launch each
        assert {key[-1] for key in xl._runs if key[1:2] == ("cross_entropy_scale",)} == {0, 1}


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_without_a_gradient_the_forward_zeroes_the_ticket_and_the_reduce_counts_the_mean(recorded, reduction):
    M, N = 37, 600
    x, t = torch.randn(M, N), torch.randint(0, N, (M,))
    loss = ce.cross_entropy(x, t, reduction=reduction)
    mean = reduction == "mean"
    assert [k for k, *_ in recorded] == ["cross_entropy_forward", "cross_entropy_reduce"]
    fwd, red = recorded[0].pointers, recorded[1].pointers
    w = fwd[3]
    parts, counts, ticket, applied, _ = xl.workspace_layout(M, 4)
    assert fwd[1] == 0 and fwd[6:] == (0, w + ticket)  # no gradient, no scale; the ticket zeroed
    # the mean: the reduce counts the targets into the counts' slots itself
    targets = t.data_ptr() if mean else 0
    assert red == (w, targets, w + counts if mean else 0, w + parts, w + ticket, loss.data_ptr(), w + applied)


# --- GPU ---------------------------------------------------------------------------------------


def _close(got, ref, dtype: str, what: str) -> None:
    got, ref = got.detach().double().cpu(), ref.detach().double().cpu()
    assert torch.equal(got.isnan(), ref.isnan()), f"{what}: NaN positions differ"
    fin = ~ref.isnan()
    tol = tolerance(dtype)
    err = (got[fin] - ref[fin]).abs()
    bound = tol["atol"] + tol["rtol"] * ref[fin].abs()
    assert bool((err <= bound).all()), f"{what}: max error {float(err.max()):.3g}; tolerance {tol}"


def _inputs(M, V, dtype, seed, ignored=0.2):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(M, V, generator=g, dtype=torch.float64) * 3).to(DTYPES[dtype])
    t = torch.randint(0, V, (M,), generator=g)
    t[torch.rand(M, generator=g) < ignored] = -100
    return x.cuda(), t.cuda()


def _reference(x, t, reduction):
    x64 = x.detach().double().cpu().requires_grad_()
    loss = F.cross_entropy(x64, t.cpu(), reduction=reduction)
    (grad,) = torch.autograd.grad(loss.sum(), x64)
    return loss.detach(), grad


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("reduction", ce.REDUCTIONS)
@pytest.mark.parametrize("M", [1, LARGE_M])
@pytest.mark.parametrize("with_grad", [True, False])
def test_reduced_loss_matches_float64_reference(dtype, reduction, M, with_grad):
    V = 600 if M == 1 else 40
    x, t = _inputs(M, V, dtype, seed=M + V, ignored=0.0 if M == 1 else 0.2)
    ref_loss, ref_grad = _reference(x, t, reduction)
    xg = x.clone().requires_grad_(with_grad)
    with arrays.poison_outputs():
        loss = ce.cross_entropy(xg, t, reduction=reduction)
        if with_grad:
            (grad,) = torch.autograd.grad(loss.sum(), xg)
    assert loss.dtype == x.dtype and loss.shape == ref_loss.shape
    _close(loss, ref_loss, dtype, f"loss {M}x{V} {reduction}")
    if with_grad:
        top = ref_grad.abs().max()
        _close(grad / top, ref_grad / top, dtype, f"gradient {M}x{V} {reduction}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("with_grad", [True, False])
def test_every_target_ignored_mean_is_nan_and_sum_zero(dtype, with_grad):
    x, t = _inputs(LARGE_M, 40, dtype, seed=3, ignored=1.0)
    for reduction in ("mean", "sum"):
        xg = x.clone().requires_grad_(with_grad)
        with arrays.poison_outputs():
            loss = ce.cross_entropy(xg, t, reduction=reduction)
            if with_grad:
                (grad,) = torch.autograd.grad(loss, xg)
                assert torch.equal(grad, torch.zeros_like(grad)), reduction
        if reduction == "mean":
            assert bool(loss.isnan()), "every target ignored: the mean is 0 / 0"
        else:
            assert float(loss) == 0.0


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_the_reduced_loss_has_the_same_bits_run_to_run(dtype):
    x, t = _inputs(LARGE_M, 600, dtype, seed=4)
    for reduction in ("mean", "sum"):
        xg = x.clone().requires_grad_()
        first = ce.cross_entropy(xg, t, reduction=reduction)
        (g1,) = torch.autograd.grad(first, xg)
        g1 = g1.clone()
        for _ in range(3):
            again = ce.cross_entropy(xg, t, reduction=reduction)
            (g2,) = torch.autograd.grad(again, xg)
            assert torch.equal(again, first) and torch.equal(g2, g1), reduction
        with torch.no_grad():
            assert torch.equal(ce.cross_entropy(x, t, reduction=reduction), first), reduction


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_upstream_gradients_in_the_loss_dtype_scale_backward_after_backward(dtype):
    x, t = _inputs(300, 600, dtype, seed=5)
    _, ref = _reference(x, t, "mean")
    top = ref.abs().max()
    xg = x.clone().requires_grad_()
    loss = ce.cross_entropy(xg, t)
    for factor in (0.5, 3.0, 1.0, 1.0, 0.25):
        (g,) = torch.autograd.grad(loss * factor, xg, retain_graph=True)
        _close(g.double() / (factor * top), ref / top, dtype, f"gradient x {factor}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("M", [1, PARTS - 1, PARTS, PARTS + 1, 65537, ROUNDS_M])
def test_the_parts_sum_every_row_once_in_an_order_fixed_by_m(dtype, M):
    """Poisoned workspaces (a ticket nobody zeroed is NaN's bits: no block would take the last
    ticket and the loss would stay NaN): the reduced loss is the fp64 sum of the forward's own row
    losses (/ the rows counted), the same bits run to run, with a gradient (the count kernel's
    counts, its ticket) and without (the reduce's own counts, the forward's ticket)."""
    x, t = _inputs(M, 8, dtype, seed=M)
    rows, _, _ = xl.run_forward(x, t, -100, 0.0)  # the losses the reduce sums, in fp32 (fp64)
    for reduction in ("mean", "sum"):
        ref = rows.double().sum()
        if reduction == "mean":
            ref = ref / (t != -100).sum().double()
        got = []
        for with_grad in (True, False, True, False):
            xg = x.clone().requires_grad_(with_grad)
            with arrays.poison_outputs():
                got.append(ce.cross_entropy(xg, t, reduction=reduction).detach())
        _close(got[0].reshape(1), ref.reshape(1), dtype, f"{reduction} of {M} rows")
        bits = [g.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[g.element_size()]) for g in got]
        assert all(torch.equal(b, bits[0]) for b in bits), (
            f"{reduction} of {M} rows: bits differ between runs"
        )
        # every target ignored: the mean 0 / 0, the sum 0, however the count is taken
        ignored = torch.full_like(t, -100)
        for with_grad in (True, False):
            with arrays.poison_outputs():
                loss = ce.cross_entropy(x.clone().requires_grad_(with_grad), ignored, reduction=reduction)
            assert bool(loss.isnan()) if reduction == "mean" else float(loss) == 0.0, (reduction, with_grad)
