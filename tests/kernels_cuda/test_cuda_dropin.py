"""kernels_cuda.softmax as a drop-in for F.softmax in a user's program (GPU): autograd, float64
and gradcheck, torch.compile(fullgraph=True, dynamic=True), torch.export, batch invariance, new
row counts, and a tensor on a second GPU.

    scripts/test-in-place tests/kernels_cuda/test_cuda_dropin.py -m gpu
"""

from __future__ import annotations

import math

import kernels_cuda
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from kernels_cuda import arrays
from kernels_cuda import softmax_variants as variants

pytestmark = pytest.mark.gpu

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
# 4096x600 and 2048x4096 fp32, 256x131072 bf16: rows whose bits depended on M before plans were
# made per (N, dtype); 64x50257 and 512x50257 bf16 (a GPT-2 vocabulary, odd rows: the cluster
# kernel splits each by its own address) and 64x262144 bf16 take the cluster kernel.
INVARIANCE_SHAPES = [
    (4096, 600, "float32"),
    (2048, 4096, "float32"),
    (256, 131072, "bfloat16"),
    (64, 50257, "bfloat16"),
    (512, 50257, "bfloat16"),
    (64, 262144, "bfloat16"),
    (300, 32768, "float32"),
    (64, 50257, "float32"),
    (1000, 1000, "float16"),
]


def _grad_tol(dtype):
    return {torch.float32: (1e-5, 1e-6), torch.bfloat16: (2e-2, 1e-3), torch.float16: (5e-3, 1e-4)}[dtype]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape,dim", [((64, 600), -1), ((8, 4096), -1), ((4, 40000), -1), ((16, 12, 33), 1)])
def test_autograd_matches_torch(shape, dim, dtype):
    dt = DTYPES[dtype]
    x = (torch.randn(shape, device="cuda") * 3).to(dt).requires_grad_()
    g = torch.randn(shape, device="cuda").to(dt)
    y = kernels_cuda.softmax(x, dim)
    assert y.grad_fn is not None
    (y * g).sum().backward()
    xr = x.detach().double().requires_grad_()
    yr = torch.softmax(xr, dim)
    (yr * g.double()).sum().backward()
    rtol, atol = _grad_tol(dt)
    torch.testing.assert_close(y.detach().double(), yr.detach(), rtol=rtol, atol=atol)
    # the gradient is formed from y rounded to the dtype, so short rows of large probabilities
    # carry that rounding: held to torch's own error on the same input where it is larger
    xt = x.detach().clone().requires_grad_()
    (torch.softmax(xt, dim) * g).sum().backward()
    theirs = float((xt.grad.double() - xr.grad).abs().max())
    torch.testing.assert_close(x.grad.double(), xr.grad, rtol=rtol, atol=max(atol, 2 * theirs))
    x.grad = None
    kernels_cuda.softmax(x, dim).sum().backward()  # a stride-0 gradient: dx is ~0
    assert x.grad.abs().max().item() < 1e-2


def test_no_grad_and_detached_inputs_take_the_eager_path():
    x = torch.randn(8, 600, device="cuda", requires_grad=True)
    with torch.no_grad():
        assert kernels_cuda.softmax(x).grad_fn is None
    assert kernels_cuda.softmax(x.detach()).grad_fn is None


@pytest.mark.parametrize(
    "shape,dim", [((7, 600), -1), ((3, 100003), -1), ((5, 9, 11), 0), ((), 0), ((1, 1), -1)]
)
def test_float64_within_1e_12_of_the_reference(shape, dim):
    x = torch.randn(shape, device="cuda", dtype=torch.float64) * 10
    if x.dim() == 2 and x.shape[-1] > 8:
        x[0, 3] = 700.0  # a huge maximum: everything else underflows to 0
        x[-1, -1] = x[-1, 0] = 50.0  # the maximum last, and repeated
    with arrays.poison_outputs():
        y = kernels_cuda.softmax(x, dim)
    ref = torch.softmax(x.cpu(), dim)
    assert y.dtype == torch.float64
    assert (y.cpu() - ref).abs().max().item() <= 1e-12
    dy = torch.randn_like(x)
    dx = kernels_cuda.softmax_backward(y, dy, dim)
    ref_dx = torch.ops.aten._softmax_backward_data(dy.cpu(), ref, dim % max(x.dim(), 1), torch.float64)
    assert (dx.cpu() - ref_dx).abs().max().item() <= 1e-12


def test_float64_adversarial_rows_as_torch():
    inf = float("inf")
    x = torch.tensor(
        [
            [-inf, -inf, -inf],
            [1.0, float("nan"), 2.0],
            [inf, 0.0, 1.0],
            [-inf, 0.0, -inf],
            [1e308, -1e308, 0.0],
        ],
        device="cuda",
        dtype=torch.float64,
    )
    torch.testing.assert_close(kernels_cuda.softmax(x).cpu(), torch.softmax(x.cpu(), -1), equal_nan=True)


@pytest.mark.parametrize("shape,dim", [((4, 7), -1), ((3, 5, 6), 1), ((2, 300), -1)])
def test_gradcheck_in_float64(shape, dim):
    x = torch.randn(shape, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: kernels_cuda.softmax(t, dim), (x,), eps=1e-6, atol=1e-8)


class _Attention(torch.nn.Module):
    def forward(self, q, k):
        return kernels_cuda.softmax(q @ k.transpose(-1, -2), dim=-1)


def test_compile_fullgraph_dynamic_one_graph_for_five_row_counts():
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    model = torch.compile(_Attention(), fullgraph=True, dynamic=True)
    k = torch.randn(600, 64, device="cuda")
    for m in (3, 17, 64, 257, 1000):
        q = torch.randn(m, 64, device="cuda", requires_grad=True)
        y = model(q, k)
        torch.testing.assert_close(y, torch.softmax(q @ k.T, -1), rtol=1e-5, atol=1e-6)
        y.square().sum().backward()  # through the op's autograd, inside the compiled graph
        assert q.grad is not None and q.grad.isfinite().all()
    assert counters["stats"]["unique_graphs"] == 1, dict(counters["stats"])
    assert not counters["graph_break"], dict(counters["graph_break"])
    assert counters["stats"]["calls_captured"] >= 1


def test_export_traces_one_node_with_a_dynamic_row_count():
    x = torch.randn(32, 600, device="cuda")
    rows = torch.export.Dim("rows", min=2, max=1 << 20)

    class Model(torch.nn.Module):
        def forward(self, x):
            return kernels_cuda.softmax(x * 2.0, dim=-1)

    ep = torch.export.export(Model(), (x,), dynamic_shapes={"x": {0: rows}})
    targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert any("kernels_cuda.softmax" in t for t in targets), targets
    for m in (5, 1234):
        z = torch.randn(m, 600, device="cuda")
        torch.testing.assert_close(ep.module()(z), torch.softmax(z * 2.0, -1), rtol=1e-5, atol=1e-6)


def _rows_to_check(m: int) -> list[int]:
    return sorted({0, 1, 2, 3, 8, m // 2, m // 2 + 1, m - 2, m - 1} & set(range(m)))


def _check_invariant(m: int, n: int, dtype: str, seed: int) -> None:
    """Row i of a batch against the row in other batches: a row's bits depend on (N, dtype) and
    its address modulo 16 bytes only, so each comparison puts the row at the same offset. Alone
    (`x[i:i+1]`, a view at the row's own address) the fresh output starts on a 16-byte boundary,
    so it shares the row's offset where the row starts on one; elsewhere the forward is given an
    out= at the row's offset. In another batch the row sits at index i mod (rows per 16 bytes)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn(m, n, device="cuda", generator=g) * 4).to(DTYPES[dtype])
    if n > 4:
        x[:: max(1, m // 3), -1] = 30.0  # adversarial rows: the maximum last, then first, repeated
        x[1 % m, 0] = 30.0
    y = kernels_cuda.softmax(x)
    dy = torch.randn(m, n, device="cuda", generator=g).to(DTYPES[dtype])
    dx = kernels_cuda.softmax_backward(y, dy)
    row_bytes = n * x.element_size()
    period = 16 // math.gcd(row_bytes, 16)  # rows until a row's offset from 16 bytes repeats
    out = torch.full_like(x, math.nan)
    for i in _rows_to_check(m):
        where = (m, n, dtype, i)
        if i * row_bytes % 16 == 0:  # alone, output and row share the offset: the same plan
            assert torch.equal(kernels_cuda.softmax(x[i : i + 1])[0], y[i]), where
            alone_dx = kernels_cuda.softmax_backward(y[i : i + 1], dy[i : i + 1])[0]
            assert torch.equal(alone_dx, dx[i]), where
        kernels_cuda.softmax(x[i : i + 1], out=out[i : i + 1])  # alone, into a row at its offset
        assert torch.equal(out[i], y[i]), where
        # among different neighbours, another row count, the row at the same offset
        k = i % period
        other = torch.randn(k + 3, n, device="cuda").to(x.dtype)
        other[k] = x[i]
        assert torch.equal(kernels_cuda.softmax(other)[k], y[i]), where
        other_y, other_dy = torch.softmax(other.float(), -1).to(x.dtype), torch.randn_like(other)
        other_y[k], other_dy[k] = y[i], dy[i]
        assert torch.equal(kernels_cuda.softmax_backward(other_y, other_dy)[k], dx[i]), where


@pytest.mark.parametrize("m,n,dtype", INVARIANCE_SHAPES)
def test_a_row_is_the_same_bits_whatever_else_is_in_the_batch(m, n, dtype):
    _check_invariant(m, n, dtype, seed=m + n)


@settings(max_examples=40)
@given(
    m=st.integers(1, 3000),
    n=st.one_of(st.integers(1, 5000), st.sampled_from([8192, 16385, 32768, 50257, 65536, 131072, 262144])),
    dtype=st.sampled_from(sorted(DTYPES)),
    seed=st.integers(0, 2**31 - 1),
)
def test_batch_invariance_property(m, n, dtype, seed):
    if m * n > 1 << 26:
        m = max(1, (1 << 26) // n)
    _check_invariant(m, n, dtype, seed)


def test_a_new_row_count_plans_nothing():
    kernels_cuda.softmax(torch.randn(3, 600, device="cuda"))
    misses = variants.cached_row_plan.cache_info().misses
    xs = [torch.randn(m, 600, device="cuda") for m in range(4, 200, 7)]
    for x in xs:
        with arrays.poison_outputs():
            y = kernels_cuda.softmax(x)
        torch.testing.assert_close(y, torch.softmax(x, -1), rtol=1e-5, atol=1e-6)
    assert variants.cached_row_plan.cache_info().misses == misses


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_the_tensors_device_decides_whatever_the_current_device():
    torch.cuda.set_device(0)
    variants.clear_caches()
    streams = [torch.cuda.current_stream(d) for d in (0, 1)]
    on1 = torch.device("cuda", 1)
    cases = [
        torch.randn(64, 600, device=on1),  # cold, then cached, below
        torch.randn(5, 600, device=on1),  # a new row count
        torch.randn(8, 131072, device=on1, dtype=torch.bfloat16),  # clusters
        torch.randn(4, 50257, device=on1),  # odd long rows
        torch.randn(6, 7, 300, device=on1).transpose(1, 2),  # strided, a copy
        torch.randn(9, 33, device=on1, dtype=torch.float64),
    ]
    for x in cases:
        for _ in range(2):
            with arrays.poison_outputs():
                y = kernels_cuda.softmax(x, dim=-1)
            assert y.device == on1
            torch.testing.assert_close(y.double(), torch.softmax(x.double(), -1), rtol=2e-2, atol=1e-5)
        out = torch.full_like(x, float("nan"))
        kernels_cuda.softmax(x, dim=-1, out=out)  # in place into out
        torch.testing.assert_close(out, y)
        xg = x.detach().clone().requires_grad_()
        kernels_cuda.softmax(xg, -1).square().sum().backward()  # backward on device 1
        assert xg.grad.device == on1 and xg.grad.isfinite().all()
    with torch.cuda.stream(torch.cuda.Stream(on1)):  # the caller's stream on device 1
        side = torch.cuda.current_stream(1)
        y = kernels_cuda.softmax(cases[0])
        assert torch.cuda.current_stream(1) == side
    torch.cuda.synchronize(1)
    torch.testing.assert_close(y, torch.softmax(cases[0], -1))
    assert torch.cuda.current_device() == 0
    assert [torch.cuda.current_stream(d) for d in (0, 1)] == streams
    torch.cuda.synchronize(0)  # device 0's context is intact
    assert (torch.ones(2, device="cuda:0") + 1).sum().item() == 4
