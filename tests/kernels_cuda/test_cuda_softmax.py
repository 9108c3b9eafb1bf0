"""Every softmax variant on a GPU against labtools' float64 reference: drawn shapes, dtypes, dims
and layouts, masked and non-finite rows, bf16 stress rows, empty and scalar inputs, 64-bit row
offsets, and calls on the caller's stream, with CuPy arrays, through the layout cache and from
several threads.

Outputs are poisoned (NaN) before each launch, either by `arrays.poison_outputs()` for outputs the
package allocates or by a NaN-filled `out=`, and inputs are finite, so an element no kernel wrote
fails the comparison. Shapes, dtypes, dims and layouts are drawn by Hypothesis within each
variant's designed range and a memory bound per example; HYPOTHESIS_PROFILE=gpu makes the sweep
large. Which kernel and launch plan a row takes (v3's 16-byte packs and few-row launches, v4's
cluster sizes, cluster or online kernel, chunks held in registers or shared memory) is checked in
test_cuda_softmax_routes.py; the inputs and the comparison both use are in cuda_softmax_helpers.py.
Run: scripts/test-in-place tests/kernels_cuda -m gpu
"""

from __future__ import annotations

import math

import kernels_cuda
import numpy as np
import pytest
import torch
from cuda_softmax_helpers import TORCH_DTYPES, _assert_softmax, _f64, _make_input, _randn
from hypothesis import given, note
from hypothesis import strategies as st
from kernels_cuda import arrays
from kernels_cuda import softmax_variants as variants
from labtools.ops import softmax_ref, softmax_stress_rows, tolerance

pytestmark = pytest.mark.gpu

MAX_ELEMENTS = 1 << 22  # per example: 16 MB of fp32 in, the same out, plus a float64 reference
BOUNDARIES = [
    1,
    2,
    3,
    31,
    32,
    33,
    127,
    128,
    129,
    600,
    1000,
    1024,
    1025,
    4095,
    4096,
    4097,
    8192,
    8200,
    16384,
    16385,
    32768,
    32769,
    65536,
    100_003,
    131072,
    262144,
    300_000,
]
# The longest row each variant is designed for (v3: any layout; 16-byte packs reach further, in
# test_cuda_softmax_routes.py).
MAX_N = {"v1": 1024, "v2": 300_000, "v3": 16384, "v4": 300_000, "v4_online": 300_000, "auto": 300_000}
LAYOUTS = ("contiguous", "dim0", "middle", "sliced", "offset", "broadcast")


@st.composite
def problems(draw, variant: str):
    max_n = MAX_N[variant]
    n = draw(
        st.one_of(
            st.integers(1, 256), st.integers(1, max_n), st.sampled_from([b for b in BOUNDARIES if b <= max_n])
        )
    )
    m = draw(st.integers(1, max(1, min(4096, MAX_ELEMENTS // n))))
    return (
        draw(st.sampled_from(LAYOUTS)),
        m,
        n,
        draw(st.sampled_from(sorted(TORCH_DTYPES))),
        draw(st.sampled_from([1.0, 8.0, 0.01])),
        draw(st.booleans()),
    )


@pytest.mark.parametrize("variant", variants.VARIANTS)
@given(data=st.data())
def test_softmax_matches_the_float64_reference(variant, data):
    layout, m, n, dtype, scale, explicit_out = data.draw(problems(variant))
    x, dim = _make_input(layout, m, n, dtype, scale)
    note(f"{variant} {layout} x{tuple(x.shape)} stride {x.stride()} dim {dim} {dtype} scale {scale}")
    with arrays.poison_outputs():  # also poisons the temporary a transposed out= goes through
        if explicit_out:
            out = torch.full(x.shape, math.nan, dtype=x.dtype, device="cuda")
            assert kernels_cuda.softmax(x, dim=dim, variant=variant, out=out) is out
            y = out
        else:
            y = kernels_cuda.softmax(x, dim=dim, variant=variant)
    _assert_softmax(y, x, dim, dtype)


@pytest.mark.parametrize("variant", variants.VARIANTS)
@pytest.mark.parametrize("dtype", sorted(TORCH_DTYPES))
def test_masked_infinite_and_nan_rows_behave_like_torch(variant, dtype):
    n = 700 if variant == "v1" else 20000
    x = _randn((6, n), dtype, 2.0)
    x[0, ::3] = -math.inf  # a masked row: exp(-inf) = 0
    x[1] = -math.inf  # fully masked: NaN, as torch
    x[2, 5] = math.inf  # +inf: NaN row
    x[3, 7] = math.nan  # NaN: NaN row
    x[4, : n // 2] = -math.inf  # half of the row (whole warps and blocks) masked
    with arrays.poison_outputs():
        y = kernels_cuda.softmax(x, variant=variant)
    ref = torch.softmax(x.double(), dim=-1)
    assert torch.equal(torch.isnan(y), torch.isnan(ref))
    _assert_softmax(y[[0, 4, 5]], x[[0, 4, 5]], -1, dtype)


@pytest.mark.parametrize("variant", ["v3", "v4", "v4_online", "auto"])
@pytest.mark.parametrize("n", [600, 20000])
def test_bf16_stress_rows_no_worse_than_torch(variant, n):
    """bf16 rows of every magnitude a bf16 can hold (labtools.ops.softmax_stress_rows), through
    each forward path: each row's error is at most F.softmax's or one bf16 unit of its largest
    output."""
    x = torch.tensor(softmax_stress_rows(n, 5)).to(torch.bfloat16).cuda()
    with arrays.poison_outputs():
        y = kernels_cuda.softmax(x, variant=variant)
    expected = softmax_ref(_f64(x))
    theirs = torch.softmax(x, -1)
    assert not torch.isnan(y).any()
    for r in range(x.shape[0]):
        ulp = 2.0 ** (math.floor(math.log2(expected[r].max())) - 7)
        err = np.abs(_f64(y[r]) - expected[r]).max()
        torch_err = np.abs(_f64(theirs[r]) - expected[r]).max()
        assert err <= max(torch_err, ulp), f"row {r}: error {err:.3g}, F.softmax's {torch_err:.3g}"


@pytest.mark.parametrize("variant", variants.VARIANTS)
def test_empty_scalar_and_single_element_inputs(variant):
    for shape, dim in [((0, 5), -1), ((5, 0), -1), ((2, 0, 3), 0), ((3, 4, 0), 1)]:
        y = kernels_cuda.softmax(torch.randn(shape, device="cuda"), dim=dim, variant=variant)
        assert y.shape == shape and y.is_cuda
    scalar = kernels_cuda.softmax(torch.tensor(3.0, device="cuda"), variant=variant)
    assert scalar.shape == () and scalar.item() == pytest.approx(1.0, rel=1e-6)
    with arrays.poison_outputs():
        ones = kernels_cuda.softmax(torch.randn(7, 1, device="cuda"), variant=variant)
    torch.testing.assert_close(ones, torch.ones(7, 1, device="cuda"), **tolerance("float32"))


@pytest.mark.parametrize("variant", ["v2", "v3", "v4", "auto"])
def test_runs_on_the_callers_current_stream(variant):
    """On a side stream, queue a long sleep and then overwrite x: a kernel on any other stream
    would read the old x before the write lands."""
    x = torch.randn(64, 4096, device="cuda")
    new = torch.randn_like(x)
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)  # ~25 ms of GPU time
        x.copy_(new)
        y = kernels_cuda.softmax(x, variant=variant)
    side.synchronize()
    _assert_softmax(y, new, -1, "float32")


def test_cupy_arrays_in_cupy_arrays_out():
    cupy = pytest.importorskip("cupy")
    rng = cupy.random.default_rng(0)
    for dtype, variant in [("float32", "auto"), ("float16", "v3"), ("float32", "v4"), ("float16", "v1")]:
        x = rng.standard_normal((33, 1000), dtype=cupy.float32).astype(dtype) * 3
        with arrays.poison_outputs():
            y = kernels_cuda.softmax(x, variant=variant)
        assert isinstance(y, cupy.ndarray) and y.dtype == x.dtype
        _assert_softmax(y, x, -1, dtype)
        with arrays.poison_outputs():
            y0 = kernels_cuda.softmax(x.T, dim=0, variant=variant)  # transposed view
        _assert_softmax(y0, x.T, 0, dtype)


@pytest.mark.parametrize("variant", ["v2", "v3", "auto"])
def test_row_offsets_past_2_to_the_31_elements(variant):
    """M * N > 2^31: row offsets must be 64-bit. Checks the first and the last rows."""
    n = 16384
    m = 2**31 // n + 3
    free, _ = torch.cuda.mem_get_info()
    if free < 3 * m * n * 2:
        pytest.skip(f"needs {3 * m * n * 2 / 2**30:.1f} GiB free on the GPU, {free / 2**30:.1f} GiB are")
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    y = kernels_cuda.softmax(x, variant=variant)
    rows = [0, m - 3, m - 2, m - 1]
    _assert_softmax(y[rows], x[rows], -1, "bfloat16")
    del x, y
    torch.cuda.empty_cache()


def test_a_cached_call_follows_each_new_input_and_output():
    """Same layout, new memory every call (and layouts interleaved): the packed launch must take
    this call's pointers, never the previous call's."""
    shapes = [((512, 600), torch.float32), ((64, 50257), torch.bfloat16), ((33, 1000), torch.float16)]
    for _ in range(3):
        for shape, dtype in shapes:
            x = (torch.randn(shape, device="cuda") * 3).to(dtype)
            with arrays.poison_outputs():
                y = kernels_cuda.softmax(x)
            _assert_softmax(y, x, -1, str(dtype).removeprefix("torch."))


def test_threads_calling_at_once_each_get_their_own_result():
    import concurrent.futures

    def work(seed: int) -> bool:
        g = torch.Generator(device="cuda").manual_seed(seed)
        ok = True
        for _ in range(20):
            x = torch.randn(256, 600, device="cuda", generator=g)
            ok &= torch.allclose(kernels_cuda.softmax(x), torch.softmax(x, -1), atol=1e-6, rtol=1e-5)
        torch.cuda.synchronize()
        return ok

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(8)))


def test_a_thread_that_has_not_touched_cuda_yet_can_launch():
    import threading

    x = torch.randn(128, 600, device="cuda")
    kernels_cuda.softmax(x)  # the layout is cached; the new thread takes the fast path at once
    torch.cuda.synchronize()
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("y", kernels_cuda.softmax(x)))
    thread.start()
    thread.join()
    torch.cuda.synchronize()
    _assert_softmax(result["y"], x, -1, "float32")
