"""kernels_triton.softmax against the float64 references, forward and backward: values, dims,
layouts, dtypes, non-finite rows, in place, errors, autograd, compile, GPU launches.

Without a GPU these run under Triton's interpreter (set by tests/conftest.py): small
grids, fp32 and fp16 (the interpreter has no bf16), both paths (one pass and the looped
online softmax, forced with a small block). With a GPU the same tests run on CUDA, and
the `gpu` ones add bf16, large Hypothesis sweeps and the benchmark shapes.

Kernel-level tests launch into outputs filled with NaN, so an element a kernel does not
write fails the comparison. Accuracy, configs and picks, float64 and batch invariance have
their own files.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from kernels_triton import (
    SoftmaxConfig,
    SoftmaxDimError,
    configs,
    launch,
    softmax,
    softmax_,
    softmax_backward,
)
from labtools.ops import softmax_backward_ref, softmax_ref, tolerance
from triton_helpers import DEVICE, DTYPES, assert_close, launch_poisoned, randn, warp_rows

# The interpreter evaluates masked-off lanes too (rows past M hold -inf - -inf), and numpy warns.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

SWEEP = [(4096, 600), (65536, 600), (262144, 600), (32768, 1024), (16384, 4096), (8192, 8192),
         (4096, 32768), (1024, 131072), (256, 262144)]  # fmt: skip


# --- kernels, both paths, poisoned outputs ------------------------------------------------

# Blocks from 16 (many looped tiles) to 2048 (one pass, several short rows a program),
# with and without the looped path's L2 eviction hints.
launch_configs = st.builds(
    SoftmaxConfig,
    block=st.sampled_from([16, 32, 64, 128, 256, 1024, 2048]),
    num_warps=st.sampled_from([2, 4]),
    l2_hints=st.booleans(),
)


@given(
    m=st.integers(1, 6),
    n=st.integers(1, 700),
    dtype=st.sampled_from(DTYPES),
    config=st.none() | launch_configs,
    scale=st.sampled_from([0.1, 1.0, 20.0]),
    seed=st.integers(0, 2**31 - 1),
)
def test_forward_kernel_matches_reference(m, n, dtype, config, scale, seed):
    x = randn((m, n), dtype, seed, scale)
    y = launch_poisoned("softmax_fwd", [x], config)
    assert y.dtype == dtype
    assert_close(y, softmax_ref(x.cpu().double().numpy()), dtype)


@given(
    m=st.integers(1, 6),
    n=st.integers(1, 700),
    dtype=st.sampled_from(DTYPES),
    config=st.none() | launch_configs,
    seed=st.integers(0, 2**31 - 1),
)
def test_backward_kernel_matches_reference(m, n, dtype, config, seed):
    y = torch.softmax(randn((m, n), torch.float64, seed, 3.0), -1).to(dtype)
    dy = randn((m, n), dtype, seed + 1)
    dx = launch_poisoned("softmax_bwd", [y, dy], config)
    assert_close(dx, softmax_backward_ref(y.cpu().double().numpy(), dy.cpu().double().numpy()), dtype)


@pytest.mark.parametrize("l2_hints", [False, True], ids=["plain", "l2_hints"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_looped_path_with_more_rows_than_programs(dtype, l2_hints):
    """A row of 20000 in 8192-wide tiles (two full, one ragged), and a grid smaller than M:
    on the CPU one 'SM' and 32 KiB in flight give 1 (fp32) or 2 (fp16) programs for 3 rows."""
    config = SoftmaxConfig(8192, 8, l2_hints)
    x = randn((3, 20000), dtype, 7, 5.0)
    y = launch_poisoned("softmax_fwd", [x], config)
    assert_close(y, softmax_ref(x.cpu().double().numpy()), dtype)
    dy = randn((3, 20000), dtype, 8)
    dx = launch_poisoned("softmax_bwd", [y, dy], config)
    assert_close(dx, softmax_backward_ref(y.cpu().double().numpy(), dy.cpu().double().numpy()), dtype)


def test_strided_rows():
    """Row strides larger than N (a column slice) on inputs and outputs."""
    x = randn((5, 300), torch.float32, 3)[:, 17:217]
    out = torch.full((5, 400), float("nan"), device=DEVICE)[:, :200]
    for config in (SoftmaxConfig(256), SoftmaxConfig(64)):
        out.fill_(float("nan"))
        launch.launch("softmax_fwd", [x, out], 5, 200, config)
        assert_close(out, softmax_ref(x.cpu().double().numpy()), torch.float32)


# --- the public op: autograd, dims, layouts -------------------------------------------------


@given(
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=3),
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**31 - 1),
)
def test_softmax_any_dim_with_autograd(shape, data, dtype, seed):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    x = randn(shape, dtype, seed, 2.0).requires_grad_(True)
    y = softmax(x, dim)
    x64 = x.detach().cpu().double().numpy()
    y_ref = softmax_ref(x64, axis=dim)
    assert y.shape == x.shape and y.dtype == dtype
    assert_close(y, y_ref, dtype)
    dy = randn(shape, dtype, seed + 1)
    y.backward(dy)
    dx_ref = softmax_backward_ref(y.detach().cpu().double().numpy(), dy.cpu().double().numpy(), axis=dim)
    assert_close(x.grad, dx_ref, dtype)


@pytest.mark.parametrize(
    "make",
    [
        lambda t: t.transpose(0, 1),  # softmax dim no longer innermost: copied to rows
        lambda t: t[:, ::2],  # stride 2 along the softmax dim
        lambda t: t[1:, 3:],  # an offset view with unit stride
        lambda t: t[:1].expand(4, -1),  # row stride 0
    ],
    ids=["transposed", "step2", "offset", "expanded"],
)
def test_non_contiguous_inputs(make):
    base = randn((6, 12), torch.float32, 11, 3.0)
    x = make(base)
    before = base.clone()
    for dim in (0, 1, -1):
        assert_close(softmax(x, dim), softmax_ref(x.cpu().double().numpy(), axis=dim), torch.float32)
    assert torch.equal(base, before)  # the input is not written


def test_zero_and_one_dimensional():
    x = randn((7,), torch.float32, 1)
    assert_close(softmax(x, 0), softmax_ref(x.cpu().double().numpy()), torch.float32)
    s = torch.tensor(3.0, device=DEVICE, requires_grad=True)
    y = softmax(s, 0)
    assert y.shape == () and y.item() == 1.0
    y.backward()
    assert s.grad.item() == 0.0


@pytest.mark.parametrize("shape,dim", [((0, 5), -1), ((5, 0), -1), ((2, 0, 3), 0), ((2, 0, 3), 1)])
def test_empty(shape, dim):
    x = torch.empty(shape, device=DEVICE).requires_grad_(True)
    y = softmax(x, dim)
    assert y.shape == x.shape
    y.sum().backward()
    assert x.grad.shape == x.shape


WARP_ROW_CASES = [(d, n) for d in DTYPES for n in (100, 128, 300, 600, 1000, 1024)]


@pytest.mark.parametrize("m", [8, 7], ids=["whole-programs", "rows-past-M"])
@pytest.mark.parametrize("dtype,n", WARP_ROW_CASES, ids=[f"{str(d)[6:]}-{n}" for d, n in WARP_ROW_CASES])
def test_warp_rows_kernels_match_reference(dtype, n, m):
    """A warp a row (kernels.py): full packs unmasked, a ragged last pack (none at 128 and
    1024 in fp32; no full pack at 100), a last program with rows past M; adversarial rows:
    the maximum first, last, repeated, an offset of 1e4, magnitudes to FLT_MAX, -inf
    entries; poisoned outputs."""
    x = randn((m, n), torch.float32, n + m, 3.0)
    x[0, 0] = x[0].max() + 5
    x[1, -1] = x[1].max() + 5
    x[2, [1, n // 2, n - 1]] = x[2].max() + 2
    x[3] += 1e4
    x[4] = x[4] * 1e37
    x[4, n // 3] = torch.finfo(torch.float32).max
    x[5, ::3] = float("-inf")
    x = x.to(dtype)
    config = warp_rows(n)
    y = launch_poisoned("softmax_fwd", [x], config)
    assert_close(y, softmax_ref(x.cpu().double().numpy()), dtype)
    dy = randn((m, n), dtype, n + m + 1)
    dx = launch_poisoned("softmax_bwd", [y, dy], config)
    assert_close(dx, softmax_backward_ref(y.cpu().double().numpy(), dy.cpu().double().numpy()), dtype)


@pytest.mark.parametrize(
    "config", [None, SoftmaxConfig(8, 2), warp_rows(128)], ids=["default", "looped", "warp-rows"]
)
def test_non_finite_rows_like_torch(config):
    inf, nan = float("inf"), float("nan")
    x = torch.tensor(
        [
            [-inf] * 20,  # all -inf: NaN, as torch
            [-inf] * 10 + [1.0] + [-inf] * 9,  # one finite value: exactly one-hot
            [0.0] * 19 + [inf],  # +inf: NaN
            [0.0] * 5 + [nan] + [0.0] * 14,  # NaN: NaN
            [-inf] * 16 + [2.0, 3.0, -inf, 1.0],
        ],  # the first tiles all -inf (looped path)
        device=DEVICE,
    )
    if config is not None and config.warp_rows:  # rows of 128 (a pack a lane): the same rows, -inf-padded
        x = torch.cat([torch.full((5, 108), -inf, device=DEVICE), x], dim=1)
    got = softmax(x, -1, config=config)
    torch.testing.assert_close(got, torch.softmax(x, -1), equal_nan=True)


# --- in place: softmax_ ----------------------------------------------------------------------


@given(
    shape=st.lists(st.integers(1, 24), min_size=1, max_size=3),
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
    config=st.sampled_from([None, SoftmaxConfig(8, 2)]),
    seed=st.integers(0, 2**31 - 1),
)
def test_in_place_matches_reference(shape, data, dtype, config, seed):
    """x <- softmax(x): the same tensor back, right on a first call and on a repeated one
    (the cached plan), for the one-pass and the looped kernels."""
    dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    for k in range(2):
        x = randn(shape, dtype, seed + k, 4.0)
        expected = softmax_ref(x.cpu().double().numpy(), axis=dim)
        address = x.data_ptr()
        assert softmax_(x, dim, config=config) is x and x.data_ptr() == address
        assert_close(x, expected, dtype)


def test_in_place_views_write_only_the_view():
    base = randn((6, 12), torch.float32, 5, 3.0)
    for make in (lambda t: t.transpose(0, 1), lambda t: t[1:, 3:], lambda t: t[:, ::2]):
        b = base.clone()
        view = make(b)
        expected = softmax_ref(view.cpu().double().numpy(), axis=0)
        outside = torch.ones_like(b, dtype=torch.bool)
        make(outside).fill_(False)
        assert softmax_(view, 0) is view
        assert_close(view, expected, torch.float32)
        assert torch.equal(b[outside], base[outside])


def test_in_place_refuses_a_tensor_autograd_needs():
    x = randn((3, 5), torch.float32, 2).requires_grad_(True)
    with pytest.raises(ValueError, match="x requires grad"):
        softmax_(x)
    with torch.no_grad():  # as torch's own in-place ops: allowed where autograd is off
        expected = softmax_ref(x.detach().cpu().double().numpy())
        assert_close(softmax_(x), expected, torch.float32)
    with pytest.raises(TypeError, match="torch.Tensor"):
        softmax_(np.ones((2, 3), np.float32))


# --- errors ------------------------------------------------------------------------------


def test_bad_inputs_are_refused():
    with pytest.raises(TypeError, match="torch.Tensor"):
        softmax(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="int64"):
        softmax(torch.ones(2, 3, dtype=torch.int64, device=DEVICE))
    with pytest.raises(TypeError, match="float32, float16, bfloat16, float64"):
        softmax(torch.ones(2, 3, dtype=torch.complex64, device=DEVICE))
    with pytest.raises(TypeError, match="dim must be an int"):
        softmax(torch.ones(2, 3, device=DEVICE), 1.0)
    for bad in (2, -3):
        with pytest.raises(IndexError, match="out of range"):
            softmax(torch.ones(2, 3, device=DEVICE), bad)
        with pytest.raises(ValueError, match="out of range"):
            softmax(torch.ones(2, 3, device=DEVICE), bad)
    assert issubclass(SoftmaxDimError, IndexError) and issubclass(SoftmaxDimError, ValueError)
    with pytest.raises(ValueError, match="must match"):
        softmax_backward(torch.ones(2, 3, device=DEVICE), torch.ones(3, 2, device=DEVICE))
    # dy elsewhere: refused, not read through a foreign pointer, also where the layout was seen before
    softmax_backward(torch.ones(2, 3, device=DEVICE), torch.ones(2, 3, device=DEVICE))
    with pytest.raises(ValueError, match="meta"):
        softmax_backward(torch.ones(2, 3, device=DEVICE), torch.ones(2, 3, device="meta"))
    with pytest.raises(ValueError, match="meta"):
        softmax_backward(torch.ones(2, 3, device="meta"), torch.ones(2, 3, device=DEVICE))
    with pytest.raises(ValueError, match="power of two"):
        SoftmaxConfig(block=100)


def test_cpu_tensor_without_interpreter_says_how():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["CUDA_VISIBLE_DEVICES"] = ""
    code = "import torch, kernels_triton; kernels_triton.softmax(torch.ones(2, 3))"
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "ValueError" in run.stderr and "TRITON_INTERPRET=1" in run.stderr


# --- GPU: bf16, large sweeps, the benchmark shapes, autotuning -----------------------------


gpu_configs = st.sampled_from(configs.SPACE)


@pytest.mark.gpu
@given(
    n=st.integers(1, 70000),
    data=st.data(),
    dtype=st.sampled_from([torch.float32, torch.float16, torch.bfloat16]),
    config=gpu_configs,
    seed=st.integers(0, 2**31 - 1),
)
def test_gpu_kernels_sweep(n, data, dtype, config, seed):
    m = data.draw(st.integers(1, max(1, 2_000_000 // n)), label="m")  # up to 2M elements
    x = randn((m, n), dtype, seed, 4.0)
    y = launch_poisoned("softmax_fwd", [x], config)
    assert_close(y, softmax_ref(x.cpu().double().numpy()), dtype)
    dy = randn((m, n), dtype, seed + 1)
    dx = launch_poisoned("softmax_bwd", [y, dy], config)
    assert_close(dx, softmax_backward_ref(y.cpu().double().numpy(), dy.cpu().double().numpy()), dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("shape", SWEEP, ids=[f"{m}x{n}" for m, n in SWEEP])
def test_gpu_benchmark_shapes(shape, dtype):
    """The default configs at every benchmark shape: every element written (poisoned
    outputs, none left NaN), 64 sampled rows against the float64 reference."""
    m, n = shape
    x = randn(shape, dtype, m + n, 4.0)
    y = launch_poisoned("softmax_fwd", [x], None)
    dy = randn(shape, dtype, m + n + 1)
    dx = launch_poisoned("softmax_bwd", [y, dy], None)
    assert not y.isnan().any() and not dx.isnan().any()
    rows = torch.randperm(m)[:64].sort().values
    y_ref = softmax_ref(x[rows].cpu().double().numpy())
    assert_close(y[rows], y_ref, dtype)
    ys, dys = y[rows].cpu().double().numpy(), dy[rows].cpu().double().numpy()
    assert_close(dx[rows], softmax_backward_ref(ys, dys), dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_gpu_in_place_at_the_longest_rows(dtype):
    """softmax_ at the sweep's longest rows (the cluster form on sm_90): right in every row."""
    m, n = 256, 262144
    x = randn((m, n), dtype, 17, 6.0)
    expected = torch.softmax(x.float(), -1).to(dtype)
    rows = slice(0, 8)
    expected_rows = softmax_ref(x[rows].cpu().double().numpy())
    assert softmax_(x) is x
    assert_close(x[rows], expected_rows, dtype)
    torch.testing.assert_close(x.float(), expected.float(), **tolerance(dtype))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [600, 1000, 1024])
def test_gpu_warp_rows_at_many_rows(n):
    """A warp a row, both directions, at 32 rows an SM, whole programs and a last one with rows
    past M: every element written, right against float64."""
    sms = launch.num_sms(torch.cuda.current_device())
    for m in (32 * sms, 32 * sms + 3):
        x = randn((m, n), torch.float32, m + n, 4.0)
        x[::3, 0] = 40.0
        x[1::3, -1] = 40.0
        y = launch_poisoned("softmax_fwd", [x], warp_rows(n))
        dy = randn((m, n), torch.float32, m + n + 1)
        dx = launch_poisoned("softmax_bwd", [y, dy], warp_rows(n))
        assert not y.isnan().any() and not dx.isnan().any()
        assert_close(y, softmax_ref(x.cpu().double().numpy()), torch.float32)
        ys, dys = y.cpu().double().numpy(), dy.cpu().double().numpy()
        assert_close(dx, softmax_backward_ref(ys, dys), torch.float32)


def test_traces_as_one_opaque_op_under_compile_and_export():
    """torch.compile and torch.export see kernels_triton::softmax (forward and backward),
    never the launch inside it; the compiled result and gradient equal the reference."""
    x64 = np.random.default_rng().standard_normal((4, 37)) * 3
    x = torch.tensor(x64, dtype=torch.float32, device=DEVICE, requires_grad=True)
    dy = torch.randn(4, 37, device=DEVICE)
    compiled = torch.compile(lambda t: softmax(t, dim=-1), backend="aot_eager", fullgraph=True)
    y = compiled(x)
    y.backward(dy)
    np.testing.assert_allclose(y.detach().cpu().numpy(), softmax_ref(x64), **tolerance("float32"))
    expect_dx = softmax_backward_ref(softmax_ref(x64), dy.cpu().double().numpy())
    np.testing.assert_allclose(x.grad.cpu().numpy(), expect_dx, **tolerance("float32"))

    class Head(torch.nn.Module):
        def forward(self, t):
            return softmax(t, dim=0)

    graph = torch.export.export(Head(), (x.detach(),)).graph_module.code
    assert "kernels_triton.softmax" in graph and "data_ptr" not in graph
