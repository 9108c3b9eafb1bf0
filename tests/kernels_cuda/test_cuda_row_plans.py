"""CPU: batch-invariant plans, a new row count without planning, bounded caches, the torch ops'
fake implementations, and the float64 kernel's offline compile."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from cuda_host_launch import HostLaunch
from hypothesis import given, settings
from hypothesis import strategies as st
from kernels_cuda import arrays, backward_plans, codegen, launch_types, softmax_op
from kernels_cuda import softmax_variants as variants
from kernels_cuda.backward_call import softmax_backward
from labtools.ops import softmax_ref

DEVICES = (variants.H100, variants.A100)
# The shapes whose rows depended on M before plans were made per (N, dtype), and long rows that
# take the cluster and online kernels.
FAMILIES = [
    (600, "float32"),
    (4096, "float32"),
    (131072, "bfloat16"),
    (50257, "bfloat16"),
    (262144, "float32"),
]


def _vec(N: int, dtype: str) -> int:
    return launch_types.pack_width(dtype, N, (0, 0), (N, N))


@settings(max_examples=200)
@given(
    N=st.one_of(st.sampled_from([n for n, _ in FAMILIES]), st.integers(1, 1 << 19)),
    dtype=st.sampled_from(variants.DTYPES),
    Ms=st.lists(st.integers(1, 10**7), min_size=2, max_size=6),
    device=st.sampled_from(DEVICES),
    variant=st.sampled_from(("auto", "v4", "v4_online", "v2")),
)
def test_a_rows_reduction_order_depends_on_n_and_dtype_only(N, dtype, Ms, device, variant):
    vec = _vec(N, dtype)
    orders = {launch_types.reduction_order(variants.plan(variant, M, N, dtype, vec, device)) for M in Ms}
    assert len(orders) == 1
    bwd = {
        launch_types.reduction_order(backward_plans.plan("auto", M, N, dtype, vec, device, None, vec > 1))
        for M in Ms
    }
    assert len(bwd) == 1
    # rows that share their offsets across the arrays (fresh outputs of a row-major input)
    shared = {variants.plan(variant, M, N, dtype, vec, device, None, True) for M in Ms}
    assert len({launch_types.reduction_order(launch) for launch in shared}) == 1
    shared_bwd = {backward_plans.plan("auto", M, N, dtype, vec, device, None, True) for M in Ms}
    assert len({launch_types.reduction_order(launch) for launch in shared_bwd}) == 1


ODD_LONG_ROWS = [
    (50257, "bfloat16"),
    (50257, "float32"),
    (50257, "float16"),
    (40001, "float32"),
    (16385, "bfloat16"),
]
ROW_COUNTS = (1, 2, 3, 31, 64, 128, 512, 4096, 10**6)


@pytest.mark.parametrize("N,dtype", ODD_LONG_ROWS)
def test_odd_long_rows_with_shared_offsets_take_one_cluster_plan_for_every_row_count(N, dtype):
    """Rows that are not whole 16-byte packs, past 32 KB, whose x and y (y, dy and dx) rows share
    their offsets: the batch-invariant plan is the cluster kernel for every M, and every field of
    the launch but the grid is the same (so is the grid over clusters: M of them)."""
    for plan, kernel in (
        (variants.plan, "softmax_cluster"),
        (backward_plans.plan, "softmax_backward_cluster"),
    ):
        launches = [plan("auto", M, N, dtype, 1, variants.H100, None, True) for M in ROW_COUNTS]
        first = launches[0]
        for M, launch in zip(ROW_COUNTS, launches):
            assert launch.spec.kernel == kernel, (M, launch.spec)
            assert (launch.spec, launch.block, launch.shared_mem, launch.extra) == (
                first.spec,
                first.block,
                first.shared_mem,
                first.extra,
            )
            assert launch.grid == first.spec.cluster * min(M, variants.MAX_GRID // first.spec.cluster)
        # without shared offsets the split cannot suit the read and the write: no cluster
        apart = plan("auto", 64, N, dtype, 1, variants.H100, None, False)
        assert "cluster" not in apart.spec.kernel


def test_invariant_cluster_plans_hold_no_16_bit_chunks_in_registers():
    """Holding a 16-bit chunk in registers pays in one wave only, an M-dependent choice, and it
    reduces the chunk in another order: the invariant plan of odd rows leaves it in shared memory
    for any M (cluster_items gets no blocks_per_sm), where batch_invariant=False holds it."""
    N = 131072 - 5
    held = variants.plan("auto", 4, N, "bfloat16", 1, variants.H100, None, True, False)
    assert held.spec.kernel == "softmax_cluster" and dict(held.spec.constants)["ITEMS"] > 0
    for M in (1, 4, 64, 4096):
        launch = variants.plan("auto", M, N, "bfloat16", 1, variants.H100, None, True)
        assert launch.spec.kernel == "softmax_cluster"
        assert dict(launch.spec.constants)["ITEMS"] == 0 and launch.shared_mem > 0


@pytest.mark.parametrize(
    "M,N,dtype",
    [(4096, 600, "float32"), (2048, 4096, "float32"), (256, 131072, "bfloat16"), (64, 50257, "bfloat16")],
)
def test_the_shapes_that_broke_invariance_differ_only_with_batch_invariant_false(M, N, dtype):
    """Each of these took an M-dependent form before; batch_invariant=False still does (so the
    check above can fail), the default never does."""
    vec, order = _vec(N, dtype), launch_types.reduction_order
    fast = [variants.plan("auto", m, N, dtype, vec, variants.H100, None, True, False) for m in (1, M)]
    if vec > 1:
        assert order(fast[0]) != order(fast[1])
    invariant = [variants.plan("auto", m, N, dtype, vec, variants.H100, None, True) for m in (1, M)]
    assert order(invariant[0]) == order(invariant[1])


def test_grid_follows_from_the_row_plan_by_integer_arithmetic():
    for N, dtype in FAMILIES:
        rows = variants.row_plan("auto", N, dtype, _vec(N, dtype), variants.H100)
        for M in (1, 2, 3, 127, 600, 4097, 10**6, 2**40):
            launch = variants.plan("auto", M, N, dtype, _vec(N, dtype), variants.H100)
            assert launch == rows.launch(M) and 1 <= launch.grid <= variants.MAX_GRID
            assert launch.grid * rows.rows_per_step >= min(M * rows.group, variants.MAX_GRID - rows.group)


@pytest.fixture
def host(monkeypatch):
    monkeypatch.setattr(codegen, "packed", HostLaunch)
    monkeypatch.setattr(arrays, "check_device", lambda ops, x, fn: 0)
    monkeypatch.setattr(arrays.TorchOps, "stream", staticmethod(lambda x: 0))
    monkeypatch.setattr(variants, "current_stream", lambda device_index: 0)
    monkeypatch.setattr(variants, "device_for", lambda device_id: variants.H100)
    variants.clear_caches()
    HostLaunch.packed = 0
    yield
    variants.clear_caches()


def test_a_new_row_count_needs_no_planning_and_no_packing(host):
    first = torch.randn(5, 600)
    y = variants.softmax(first)
    planned, packed = variants.cached_row_plan.cache_info().misses, HostLaunch.packed
    assert planned == 1
    for M in (1, 7, 300, 1001):
        x = torch.randn(M, 600)
        y = variants.softmax(x)
        np.testing.assert_allclose(y.numpy(), softmax_ref(x.double().numpy(), axis=-1), rtol=1e-6, atol=1e-7)
    assert variants.cached_row_plan.cache_info().misses == planned and HostLaunch.packed == packed
    assert variants.cached_prepare.cache_info().misses == 1  # the new row counts never reached prepare


def test_caches_stay_bounded_over_many_shapes(host, monkeypatch):
    monkeypatch.setattr(variants, "MAX_CACHED_CALLS", 64)
    for N in range(1, 400):  # a new N each call: each a new plan, call and row launch
        variants.softmax(torch.randn(2, N))
    assert max(len(variants.torch_calls), len(variants.prepared_calls), len(variants.rows_calls)) <= 64
    assert variants.cached_row_plan.cache_info().currsize <= variants.cached_row_plan.cache_info().maxsize
    assert variants.cached_prepare.cache_info().maxsize == 4096


def test_batch_invariant_must_be_a_bool(host):
    with pytest.raises(TypeError, match="batch_invariant must be True or False"):
        variants.softmax(torch.randn(2, 3), batch_invariant="yes")


def test_softmax_backward_is_a_plain_function():
    import kernels_cuda

    assert kernels_cuda.softmax_backward is softmax_backward and callable(softmax_backward)
    assert type(softmax_backward).__name__ == "function"


# --- the torch ops' fake implementations (no GPU) --------------------------------------------


@pytest.mark.parametrize(
    "shape,dim", [((4, 600), -1), ((3, 5, 7), 1), ((3, 5, 7), 0), ((600,), 0), ((), 0), ((0, 9), -1)]
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_fake_softmax_has_the_eager_outputs_layout(shape, dim, dtype):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(shape, dtype=dtype, device="cpu")
        y = torch.ops.kernels_cuda.softmax(x, dim, "auto", True)
        dx = torch.ops.kernels_cuda.softmax_backward(y, y, dim, "auto", True)
    meta = torch.ops.kernels_cuda.softmax(torch.empty(shape, dtype=dtype, device="meta"), dim, "auto", True)
    for out in (y, dx, meta):
        assert out.shape == x.shape and out.dtype == dtype
        if len(shape) > 1:  # allocated with dim innermost
            d = dim % len(shape)
            assert out.stride(d) == 1
    assert y.stride() == meta.stride()


def test_fake_softmax_refuses_what_the_kernels_refuse():
    meta = torch.empty(4, 5, device="meta")
    with pytest.raises(TypeError, match="unsupported dtype"):
        torch.ops.kernels_cuda.softmax(meta.int(), -1, "auto", True)
    with pytest.raises(ValueError, match="out of range"):
        torch.ops.kernels_cuda.softmax(meta, 2, "auto", True)
    with pytest.raises(ValueError, match="dy has shape"):
        torch.ops.kernels_cuda.softmax_backward(meta, meta.T, -1, "auto", True)


@pytest.mark.filterwarnings("ignore:Accessing the data pointer of FakeTensor")
def test_a_fake_tensor_goes_through_the_op():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(8, 600)
        y = variants.softmax(x)
        dx = softmax_backward(y, y)
    assert softmax_op.is_fake(y) and y.shape == (8, 600) and dx.shape == (8, 600)


def test_the_op_records_autograd_and_out_is_refused_with_grad():
    x = torch.randn(4, 6, requires_grad=True)
    with pytest.raises(RuntimeError, match="out= does not support autograd"):
        softmax_op.through_op(x, -1, "auto", torch.empty(4, 6), True)
    assert softmax_op.needs_op(x) and not softmax_op.needs_op(x.detach())
    with torch.no_grad():
        assert not softmax_op.needs_op(x)


def test_float64_plans_and_compiles_offline(tmp_path, monkeypatch):
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    monkeypatch.setenv(codegen.CACHE_ENV, str(tmp_path))
    fwd = variants.plan("auto", 5, 1000, "float64", 2, variants.H100)
    bwd = backward_plans.plan("auto", 5, 1000, "float64", 2, variants.A100)
    assert (fwd.spec.kernel, bwd.spec.kernel) == ("softmax_f64", "softmax_backward_f64")
    assert fwd.grid == bwd.grid == 5
    with pytest.raises(ValueError, match="float64 runs with variant='auto' only"):
        variants.plan("v3", 5, 1000, "float64", 2, variants.H100)
    for spec in (fwd.spec, bwd.spec):
        assert spec in codegen.all_specs()
        for arch in ("sm_80", "sm_90"):
            res = codegen.compile_spec(spec, arch).resources
            assert res is None or res.spill_bytes == 0


# --- autograd, torch.compile and torch.export through the ops, on the host stand-in ---------


def test_autograd_runs_the_backward_op(host):
    x = torch.randn(6, 50, requires_grad=True)
    g = torch.randn(6, 50)
    y = variants.softmax(x)
    assert y.grad_fn is not None
    (y * g).sum().backward()
    xr = x.detach().double().requires_grad_()
    (torch.softmax(xr, -1) * g.double()).sum().backward()
    torch.testing.assert_close(x.grad.double(), xr.grad, rtol=1e-5, atol=1e-6)


def test_compile_fullgraph_dynamic_traces_one_graph_for_five_row_counts(host):
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()

    def f(x):
        return variants.softmax(x * 2.0, dim=-1) + 1.0

    compiled = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
    for m in (3, 17, 64, 257, 1000):
        x = torch.randn(m, 40, requires_grad=True)
        y = compiled(x)
        torch.testing.assert_close(y, torch.softmax(x * 2.0, -1) + 1.0, rtol=1e-5, atol=1e-6)
        y.square().sum().backward()
        assert x.grad is not None
    assert counters["stats"]["unique_graphs"] == 1, dict(counters["stats"])
    assert not counters["graph_break"], dict(counters["graph_break"])
    torch._dynamo.reset()


def test_export_has_the_op_as_one_node(host):
    class Model(torch.nn.Module):
        def forward(self, x):
            return variants.softmax(x, dim=-1)

    x = torch.randn(8, 30)
    ep = torch.export.export(Model(), (x,), dynamic_shapes={"x": {0: torch.export.Dim("rows", min=2)}})
    targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert targets == ["kernels_cuda.softmax.default"], targets
    z = torch.randn(13, 30)
    torch.testing.assert_close(ep.module()(z), torch.softmax(z, -1), rtol=1e-5, atol=1e-6)
