"""kernels_cuda.softmax_backward: the call and its results (the plans and the offline compile:
test_cuda_backward_plans.py; the forward's fp32 accuracy on long rows: test_cuda_long_rows.py).

CPU: bad arguments name the argument; a layout seen before skips the checks and reuses its packed
launch.
GPU (marked `gpu`): results against float64 references on fresh random inputs with NaN-poisoned
outputs, no worse than torch's own kernel; every cluster size; odd rows on the cluster kernel
with the maximum first and last; NaN, scalars and empty tensors as torch, and torch autograd.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kernels_cuda import arrays, codegen
from kernels_cuda import backward_call as bc
from kernels_cuda import backward_plans as bw
from kernels_cuda import softmax_variants as sm
from kernels_cuda.backward_call import softmax_backward


def test_bad_arguments_name_the_argument():
    torch = pytest.importorskip("torch")
    y = torch.zeros(2, 3)
    with pytest.raises(TypeError, match="expected a CuPy array or a torch CUDA tensor"):
        softmax_backward(np.zeros((2, 3)), np.zeros((2, 3)))
    with pytest.raises(TypeError, match="dy has dtype float64, y has float32"):
        softmax_backward(y, y.double())
    with pytest.raises(ValueError, match=r"dy has shape \(3, 2\), y has \(2, 3\)"):
        softmax_backward(y, y.T)
    with pytest.raises(ValueError, match="dim 2 is out of range"):
        softmax_backward(y, y, dim=2)
    with pytest.raises(ValueError, match="unknown variant"):
        softmax_backward(y, y, variant="fast")
    with pytest.raises(TypeError, match="not a CUDA device"):
        softmax_backward(y, y)


class _HostBackward:
    """Stands in for codegen.packed's PackedLaunch: computes the backward from the arguments
    exactly as packed (the three pointers given per call), in float64 over CPU memory."""

    calls: list = []

    def __init__(self, spec, device_id, grid, block, shared_mem, types, values):
        self.spec, self.values = spec, list(values)

    def __call__(self, stream, *pointers):
        assert stream == 0xC0FFEE and len(pointers) == 3
        y, dy, dx, m, n, ys, dys, dxs = (int(v) for v in [*pointers, *self.values[3:8]])
        _HostBackward.calls.append((y, dy, dx, m, n, ys, dys, dxs))
        size = np.dtype(self.spec.dtype).itemsize

        def rows(address, stride):
            count = (m - 1) * stride + n
            flat = np.ctypeslib.as_array((ctypes.c_byte * (count * size)).from_address(address))
            return np.lib.stride_tricks.as_strided(flat.view(self.spec.dtype), (m, n), (stride * size, size))

        yy, gg = rows(y, ys).astype(np.float64), rows(dy, dys).astype(np.float64)
        rows(dx, dxs)[...] = yy * (gg - (yy * gg).sum(-1, keepdims=True))

    def rows(self, stream, grid, m_slot, M, *pointers):
        self.values[m_slot] = M
        self(stream, *pointers)


def test_a_layout_seen_before_skips_the_checks_and_reuses_the_packed_launch(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(codegen, "packed", _HostBackward)
    monkeypatch.setattr(arrays, "check_device", lambda ops, x, fn: 0)
    monkeypatch.setattr(arrays.TorchOps, "stream", staticmethod(lambda x: 0xC0FFEE))
    monkeypatch.setattr(sm, "current_stream", lambda device_index: 0xC0FFEE)
    monkeypatch.setattr(sm, "device_for", lambda device_id: sm.H100)
    monkeypatch.setattr(bc, "dense_calls", {})
    _HostBackward.calls = []
    y, dy = torch.softmax(torch.randn(8, 600), -1), torch.randn(8, 600)
    expected = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
    first = softmax_backward(y, dy)
    monkeypatch.setattr(bc, "run_softmax_backward", None)  # a call not served from the cache fails
    with arrays.poison_outputs():
        again = softmax_backward(y.clone(), dy.clone())
    for dx in (first, again):
        np.testing.assert_allclose(dx.double().numpy(), expected.numpy(), rtol=1e-6, atol=1e-7)
    assert len(_HostBackward.calls) == 2 and _HostBackward.calls[0][3:] == _HostBackward.calls[1][3:]
    for miss in [
        (y.T.contiguous().T, dy),
        (y, dy, 0),
        (y, dy, True),
        (y.half(), dy.half()),
        (y, dy, -1, "twopass"),
    ]:
        with pytest.raises(TypeError):  # another layout, dim, dtype or variant: the checked path
            softmax_backward(*miss)


# --- GPU --------------------------------------------------------------------------------------


def _torch():
    return pytest.importorskip("torch")


def _dtype(name):
    return getattr(_torch(), name)


def _probs(shape, dtype, scale=3.0):
    torch = _torch()
    return torch.softmax(torch.randn(shape, device="cuda") * scale, dim=-1).to(_dtype(dtype))


def _backward_ref(y, dy, dim):
    yd, dyd = y.double(), dy.double()
    return yd * (dyd - (yd * dyd).sum(dim, keepdim=True))


def _assert_backward(dx, y, dy, dim, dtype):
    torch = _torch()
    assert dx.shape == y.shape and dx.dtype == y.dtype and not torch.isnan(dx).any()
    ref = _backward_ref(y, dy, dim)
    torch_dx = torch._softmax_backward_data(dy, y, dim % y.ndim, y.dtype)
    torch_err = float((torch_dx.double() - ref).abs().max())
    err = float((dx.double() - ref).abs().max())
    # no worse than torch's own kernel on the same input, and within the dtype's tolerance
    tol = arrays.ITEMSIZE[dtype] == 4 and 1e-6 or 8e-3
    assert err <= max(2 * torch_err, tol * float(ref.abs().max()) + 1e-7), (err, torch_err)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", bw.VARIANTS)
@given(
    m=st.integers(1, 300),
    n=st.one_of(
        st.integers(1, 2048),
        st.sampled_from([600, 1024, 4096, 8192, 8200, 16384, 16388, 32768, 65536, 131072, 100_003]),
    ),
    dtype=st.sampled_from(["float32", "float16", "bfloat16"]),
    layout=st.sampled_from(["contiguous", "sliced", "offset", "dim0"]),
)
def test_backward_matches_the_float64_reference(variant, m, n, dtype, layout):
    torch = _torch()
    m = max(1, min(m, (1 << 21) // n))
    whole_packs = layout in ("contiguous", "dim0") and n % sm.full_vec(dtype) == 0
    if variant == "fused" and n > bw.fused_capacity(sm.full_vec(dtype) if whole_packs else 1):
        n = 2000
    wide = {"contiguous": n, "sliced": n + 5, "offset": n + 1, "dim0": n}[layout]
    y = _probs((m, wide), dtype)
    dy = torch.randn(m, wide, device="cuda").to(_dtype(dtype))
    if layout == "offset":
        y, dy = y[:, 1:], dy[:, 1:]
    elif layout == "sliced":
        y, dy = y[:, :n], dy[:, :n]
    dim = -1
    if layout == "dim0":
        y, dy, dim = y.T, dy.T, 0
    with arrays.poison_outputs():
        dx = softmax_backward(y, dy, dim=dim, variant=variant)
    _assert_backward(dx, y, dy, dim, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("m,n", [(4096, 600), (4093, 600), (4096, 1024), (2048, 2048), (3000, 1500)])
def test_fused_backward_of_few_fp32_rows_matches_the_float64_reference(m, n):
    """The fused backward's launches of few fp32 rows (BackwardConfig.few_rows_per_sm): no more
    threads a row than the ladder's, in 128-thread blocks, the packs inside every row unchecked;
    padding in a thread's last pack (600, 1500); a last block with rows past M (4093)."""
    torch = _torch()
    device = sm.device_for(0)
    launch = bw.plan("auto", m, n, "float32", 4, device, batch_invariant=False)
    ladder = bw.plan(
        "auto", m, n, "float32", 4, device, bw.BackwardConfig(few_rows_per_sm=0), batch_invariant=False
    )
    # no more threads a row than the ladder (as many where the card's picks already give the
    # ladder the fewest, as on an H200)
    assert dict(launch.spec.constants)["TPR"] <= dict(ladder.spec.constants)["TPR"]
    y = _probs((m, n), "float32")
    dy = torch.randn(m, n, device="cuda") * 3
    with arrays.poison_outputs():
        dx = softmax_backward(y, dy, batch_invariant=False)
    _assert_backward(dx, y, dy, -1, "float32")


CLUSTER_CASES = [
    (n, cluster, dy_in_registers, dtype)
    for dtype in ("float32", "bfloat16")
    for n, cluster, dy_in_registers in [
        (40008, 2, True),
        (16384, 4, True),
        (131072, 4, True),  # fp32: 4-block chunks do not fit, 8-block ones do
        (131072, 16, True),
        (262144, 16, True),
        (262144, 16, False),
        (2**18 + 8, 16, True),
    ]
]
CLUSTER_CASES += [(2**19, 16, True, "bfloat16"), (2**19, 16, False, "bfloat16")]  # past fp32's clusters


@pytest.mark.gpu
@pytest.mark.parametrize("n,cluster_size,dy_in_registers,dtype", CLUSTER_CASES)
def test_backward_cluster_every_size(dtype, n, cluster_size, dy_in_registers):
    """Every cluster size, with dy in shared memory and, in 16-block clusters whose two chunks
    would fill more than half of it (64 KB of each array a block: 262144 fp32, 2**19 bf16), in
    registers."""
    torch = _torch()
    y, dy = _probs((5, n), dtype), torch.randn(5, n, device="cuda").to(_dtype(dtype))
    # a fresh cache of dense calls too: it is keyed on the layout, not on the configuration
    old, cached = bw.AUTO, bc.dense_calls
    bw.AUTO = bw.BackwardConfig(cluster_size=cluster_size, cluster_dy_in_registers=dy_in_registers)
    bc.dense_calls = {}
    try:
        device = sm.device_for(0)
        launch = bw.plan("cluster", 5, n, dtype, sm.full_vec(dtype), device)
        (chunk,), size = launch.extra, arrays.ITEMSIZE[dtype]
        assert launch.spec.cluster >= cluster_size
        in_registers = (
            dy_in_registers
            and launch.spec.cluster == 16
            and 2 * chunk * size > device.max_shared_per_block // 2
        )
        assert (dict(launch.spec.constants)["DY_PACKS"] > 0) == (in_registers and chunk * size <= 64 * 1024)
        with arrays.poison_outputs():
            dx = softmax_backward(y, dy, variant="cluster")
    finally:
        bw.AUTO, bc.dense_calls = old, cached
    _assert_backward(dx, y, dy, -1, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("m,n", [(64, 50257), (3, 40001), (1, 100_003), (5, 16385), (2, 65537), (4, 7)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_backward_cluster_rows_that_are_not_whole_16_byte_packs(m, n, dtype):
    """Odd rows on the cluster kernel, with the row's largest probabilities in its first and last
    elements (the head and the tail, summed element by element on the cluster's last block)."""
    torch = _torch()
    logits = torch.randn(m, n, device="cuda") * 2.0
    logits[:, 0] = logits[:, -1] = 12.0
    y = torch.softmax(logits, dim=-1).to(_dtype(dtype))
    dy = torch.randn(m, n, device="cuda").to(_dtype(dtype))
    dy[:, 0], dy[:, -1] = 3.0, -2.0
    for invariant in (True, False):  # the cluster's split follows the row's address, not M
        launch = bw.plan(
            "cluster", m, n, dtype, 1, sm.device_for(0), bw.AUTO, True, batch_invariant=invariant
        )
        assert launch.spec.kernel == "softmax_backward_cluster"
        with arrays.poison_outputs():
            dx = softmax_backward(y, dy, variant="cluster", batch_invariant=invariant)
        _assert_backward(dx, y, dy, -1, dtype)
    offset_y, offset_dy = y.new_zeros(m, n + 1)[:, 1:], dy.new_zeros(m, n + 1)[:, 1:]
    offset_y.copy_(y)
    offset_dy.copy_(dy)  # one element past a 16-byte boundary, a fresh dx on one: not the cluster
    with arrays.poison_outputs():
        _assert_backward(
            softmax_backward(offset_y, offset_dy, variant="cluster", batch_invariant=False),
            offset_y,
            offset_dy,
            -1,
            dtype,
        )


@pytest.mark.gpu
def test_backward_special_values_and_torch_autograd_agree():
    torch = _torch()
    x = torch.randn(4, 5000, device="cuda", requires_grad=True)
    y = torch.softmax(x, -1)
    dy = torch.randn_like(y)
    (gx,) = torch.autograd.grad(y, x, dy)
    dx = softmax_backward(y.detach(), dy)
    torch.testing.assert_close(dx, gx, rtol=1e-5, atol=1e-7)
    # NaN in y or dy spreads to its row only, as in torch
    y2, dy2 = y.detach().clone(), dy.clone()
    dy2[1, 7] = math.nan
    ref = torch._softmax_backward_data(dy2, y2, 1, y2.dtype)
    assert torch.equal(torch.isnan(softmax_backward(y2, dy2)), torch.isnan(ref))
    # scalars and empty tensors
    assert softmax_backward(torch.tensor(1.0, device="cuda"), torch.tensor(2.0, device="cuda")).item() == 0
    assert softmax_backward(torch.empty(0, 4, device="cuda"), torch.empty(0, 4, device="cuda")).shape == (
        0,
        4,
    )
