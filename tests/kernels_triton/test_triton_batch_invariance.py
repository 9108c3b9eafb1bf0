"""Batch invariance: row i of softmax(x) is the same bits as softmax(x[i:i+1]), whatever else is
in the batch, forward and backward; and a new row count costs no config choice and keeps nothing.

Rows are compared where both calls see them at the same 16-byte alignment: in every prefix
batch, and in slices starting at a row aligned as the first (aligned_rows).

On the CPU: the planner's decisions (launch.plan_form: the form and everything in it that orders
a row's reductions) for a simulated H100 are the same at every row count, and under Triton's
interpreter the kernels give every row the bits of the single-row call. On the GPU: the shapes
at which the old planner broke it, odd rows on the cluster (split at their own 16-byte
boundaries), and a Hypothesis sweep over M, N and dtype that reaches the cluster form.
"""

from __future__ import annotations

import gc
import math
from collections import OrderedDict

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernels_triton import (
    cluster,
    configs,
    launch,
    log_softmax,
    log_softmax_backward,
    softmax,
    softmax_,
    softmax_backward,
)
from kernels_triton.configs import SoftmaxConfig
from triton_helpers import DEVICE

H100 = "NVIDIA H100 80GB HBM3"  # the GPU the committed picks were tuned on
ROW_COUNTS = (1, 2, 3, 7, 16, 100, 131, 132, 133, 528, 2112, 4096, 8449, 65536, 2**20)


@pytest.fixture
def simulated_h100(monkeypatch, tmp_path):
    """The planner as it decides on an H100 (132 SMs, sm_90, the committed picks, no tuned ones),
    with no GPU: nothing is compiled or launched."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(cluster, "INTERPRET", False)
    monkeypatch.setattr(cluster, "_capable", lambda index: True)
    monkeypatch.setattr(launch, "num_sms", lambda index: 132)
    monkeypatch.setattr(launch, "gpu_name", lambda index: H100)
    configs.forget()
    yield torch.device("cuda", 0)
    configs.forget()


def decisions(device, name, n, dtype):
    """plan_form's (form, config) at each of ROW_COUNTS."""
    return {m: launch.plan_form(name, m, n, dtype, device)[:2] for m in ROW_COUNTS}


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])  # no launch: cheap
@given(
    n=st.one_of(
        st.integers(1, 70000), st.sampled_from([600, 4096, 32768, 32769, 50257, 131072, 262144, 300000])
    ),
    dtype=st.sampled_from([torch.float32, torch.float16, torch.bfloat16, torch.float64]),
    name=st.sampled_from(["softmax_fwd", "softmax_bwd"]),
)
def test_the_reduction_order_depends_on_n_and_dtype_alone(simulated_h100, n, dtype, name):
    seen = set(decisions(simulated_h100, name, n, dtype).values())
    assert len(seen) == 1, (n, dtype, name, seen)


def test_the_invariant_config_is_the_least_slowdown_across_row_counts():
    picks = [
        {"kernel": "softmax_fwd", "dtype": "float32", "N": 600, "rows_per_sm": r, "block": 1, "num_warps": 1,
         "timings_us": t}
        for r, t in ((1, {"1024/4": 5.0, "2048/8": 4.0}), (64, {"1024/4": 100.0, "2048/8": 150.0}))
    ]  # fmt: skip
    # 2048/8: 1.0 + 1.5; 1024/4: 1.25 + 1.0
    assert configs.across_row_counts(picks) == SoftmaxConfig(1024, 4)
    for config in (SoftmaxConfig(8192, 16, l2_hints=True), SoftmaxConfig(4096, 4, warp_rows=True)):
        timed = [{**p, "timings_us": {config.label(): 1.0, **p["timings_us"]}} for p in picks]
        timed[0]["timings_us"][config.label()] = 0.5  # the fastest at both row counts
        assert configs.across_row_counts(timed) == config
    assert configs.index(picks) == {("softmax_fwd", "float32", 1024): {600: SoftmaxConfig(1024, 4)}}


# --- the kernels under the interpreter (or the GPU): bits of a row against its single-row call ---

# N: one pass with several rows a program, one pass with one, looped (interpreter config 1024/4)
SHAPES = [(9, 37), (6, 600), (5, 1500)]
WARP_ROWS = "warp rows"  # stands for a warp a row, 4 rows a program: SoftmaxConfig(4 * next_pow2(N), 4, warp_rows=True)
CASES = [  # (dtype, config): every form the interpreter runs, fp32 in each
    (torch.float32, None),
    (torch.float32, SoftmaxConfig(256, 2)),
    (torch.float32, SoftmaxConfig(64, 4, l2_hints=True)),
    (torch.float32, WARP_ROWS),
    (torch.bfloat16, None),
    (torch.bfloat16, WARP_ROWS),
    (torch.float64, None),
]


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{n}" for m, n in SHAPES])
@pytest.mark.parametrize(
    "dtype, config",
    CASES,
    ids=[f"{str(d)[6:]}-{c.label() if isinstance(c, SoftmaxConfig) else c}" for d, c in CASES],
)
def test_a_row_has_the_bits_of_its_single_row_call(shape, dtype, config):
    m, n = shape
    if config is WARP_ROWS:
        if n > 1024:
            pytest.skip("a warp a row holds at most 8 packs")
        config = SoftmaxConfig(4 * configs.next_pow2(n), 4, warp_rows=True)
    g = torch.Generator().manual_seed(m * n)
    x = (torch.randn(shape, generator=g) * 5).to(dtype).to(DEVICE)
    x[0, -1] = 40.0  # the max last
    y = softmax(x, config=config)
    dy = torch.randn(shape, generator=g).to(dtype).to(DEVICE)
    dx = softmax_backward(y, dy, config=config)
    for i in (0, m - 1):
        assert torch.equal(y[i], softmax(x[i : i + 1], config=config)[0]), i
        assert torch.equal(dx[i], softmax_backward(y[i : i + 1], dy[i : i + 1], config=config)[0]), i
    mid = m // 2  # a batch of the rows from there on
    assert torch.equal(y[mid:], softmax(x[mid:], config=config))
    assert torch.equal(softmax_(x.clone(), config=config), y)


# --- a new row count: a plan derived from the layout's template -----------------------------


def test_a_new_row_count_chooses_no_config_and_makes_no_template(monkeypatch):
    launch.forget_plans()  # no template of an earlier test
    made, chosen = [], []
    plan_form, choose = launch.plan_form, configs.choose
    monkeypatch.setattr(launch, "plan_form", lambda *a, **k: made.append(a[2]) or plan_form(*a, **k))
    monkeypatch.setattr(configs, "choose", lambda *a, **k: chosen.append(a) or choose(*a, **k))
    n = 43  # a row length no other test launches
    for m in range(1, 13):
        x = torch.randn(m, n, device=DEVICE)
        torch.testing.assert_close(softmax(x), torch.softmax(x, -1))
    assert made == [n] and len(chosen) == 1


def test_a_new_row_count_keeps_nothing():
    """Row counts the process has not seen (decoding, packed batches) add no cache entry and
    leave no object behind for the garbage collector to walk, through the public ops and
    through launch.launch alike: one template a layout serves every M."""
    n = 45
    x, dy = torch.randn(70, n, device=DEVICE), torch.randn(70, n, device=DEVICE)
    out = torch.empty(70, n, device=DEVICE)

    def every_path(m: int) -> None:
        y = softmax(x[:m])
        torch.testing.assert_close(y, torch.softmax(x[:m], -1))
        softmax_backward(y, dy[:m])
        softmax_(x[:m].clone())
        launch.launch("softmax_fwd", [x[:m], out[:m]], m, n)

    for m in (1, 2):  # templates and variants (M a multiple of the rows a program takes, or not)
        every_path(m)
    entries = [len(cache) for cache in launch.PLAN_CACHES]
    gc.collect()
    tracked = len(gc.get_objects())
    for m in range(3, 70):
        every_path(m)
    gc.collect()
    assert [len(cache) for cache in launch.PLAN_CACHES] == entries
    # (USED is the process's: other tests may have used rows of n in other dtypes, in any order)
    assert {key for key in launch.USED if key[1:] == (n, "float32")} == {
        ("softmax_fwd", n, "float32"),
        ("softmax_bwd", n, "float32"),
    }
    assert len(gc.get_objects()) - tracked < 50  # 67 row counts, 268 launches


def test_template_caches_are_bounded_oldest_first():
    cache: dict = OrderedDict()
    for k in range(10):
        launch.remember(cache, k, k, limit=3)
    assert list(cache) == [7, 8, 9]


# --- GPU: the shapes the old planner broke, and a sweep over the forms -----------------------

BROKEN_BEFORE = [
    ((4096, 600), torch.float32),
    ((2048, 4096), torch.float32),
    ((512, 50257), torch.bfloat16),
    ((256, 131072), torch.bfloat16),
    ((64, 262144), torch.bfloat16),
    ((8, 300000), torch.bfloat16),  # rows past the cluster's longest: the tiles' looped kernel
    ((64, 200000), torch.float32),  # the fp32 backward past 131072: looped
]


def aligned_rows(x: torch.Tensor) -> int:
    """Every how many rows a row of x starts on the 16-byte boundary its first row starts on.
    The kernels load 16-byte packs, and a row's packs (so the order of its sums) follow its
    address: a slice starting at such a row sees its rows as x does (a prefix always does)."""
    return 16 // math.gcd(16, x.stride(0) * x.element_size())


def check_rows(x: torch.Tensor, dy: torch.Tensor, rows: list[int], batch_sizes=(1, 3)) -> None:
    """Forward and backward of every row of `rows` in x against the same row in batches of
    `batch_sizes` rows starting there, bit for bit; and of every prefix of those sizes."""
    y = softmax(x)
    dx = softmax_backward(y, dy)
    for k in batch_sizes:
        assert torch.equal(y[:k], softmax(x[:k])), k
        assert torch.equal(dx[:k], softmax_backward(y[:k], dy[:k])), k
    for i in rows:
        for k in batch_sizes:
            part = slice(i, min(i + k, x.shape[0]))
            assert torch.equal(y[i], softmax(x[part])[0]), (i, k)
            assert torch.equal(dx[i], softmax_backward(y[part], dy[part])[0]), (i, k)


@pytest.mark.gpu
@pytest.mark.parametrize("shape, dtype", BROKEN_BEFORE, ids=[f"{m}x{n}-{d}" for (m, n), d in BROKEN_BEFORE])
def test_gpu_rows_keep_their_bits_at_the_shapes_that_broke_it(shape, dtype):
    g = torch.Generator(device="cuda").manual_seed(shape[0] + shape[1])
    x = (torch.randn(shape, generator=g, device="cuda") * 4).to(dtype)
    dy = torch.randn(shape, generator=g, device="cuda").to(dtype)
    m, step = shape[0], aligned_rows(x)
    rows = sorted({0, step, (m // 2) // step * step, (m - 1) // step * step})
    check_rows(x, dy, rows, batch_sizes=(1, 2, 17, m // 2 + 1))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_odd_rows_keep_their_bits(dtype):
    """64 rows of 50257 (GPT-2's vocabulary), which sm_90 gives the cluster's head, body and tail
    (the head's length follows the row's address mod 16): row i against x[i:i+1] and the batches
    starting there, forward and backward, for every row aligned as the first, and every prefix."""
    m, n = 64, 50257
    g = torch.Generator(device="cuda").manual_seed(n)
    x = (torch.randn((m, n), generator=g, device="cuda") * 4).to(dtype)
    dy = torch.randn((m, n), generator=g, device="cuda").to(dtype)
    if cluster.applies("fwd", m, n, dtype, x.device):  # sm_90: the split, not element-wise reads
        assert launch.route("softmax_bwd", m, n, dtype, x.device) == "cluster"
        assert cluster.packs([x, x]) == 16 // x.element_size()
    check_rows(x, dy, list(range(0, m, aligned_rows(x))), batch_sizes=(1, 2, 5, 33))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [140000, 151936])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_two_tile_rows_keep_their_bits(n, dtype):
    """Rows of 131073 to 163840 columns, whose cluster blocks hold two tiles on sm_90 (cluster.tiles: the
    forwards, and the fp32 backward), softmax and log_softmax, forward and backward: every row against the
    batches starting there."""
    m = 9
    g = torch.Generator(device="cuda").manual_seed(n)
    x = (torch.randn((m, n), generator=g, device="cuda") * 4).to(dtype)
    dy = torch.randn((m, n), generator=g, device="cuda").to(dtype)
    if cluster.applies("bwd", m, n, dtype, x.device) and dtype == torch.float32:
        assert cluster.kernel_for("bwd", n, dtype, cluster.packs([x, dy, x]))[1]["CHUNK2"] > 0
    check_rows(x, dy, list(range(0, m, aligned_rows(x))), batch_sizes=(1, 2, 5))
    y = log_softmax(x)
    dx = log_softmax_backward(y, dy)
    for i in range(0, m, aligned_rows(x)):
        for part in (slice(i, i + 1), slice(i, min(i + 5, m))):
            assert torch.equal(y[i], log_softmax(x[part])[0]) and torch.equal(
                dx[i], log_softmax_backward(y[part], dy[part])[0]
            ), (i, part)


@pytest.mark.gpu
@given(
    n=st.one_of(st.integers(1, 40000), st.sampled_from([600, 4096, 32768, 50257, 131072, 262144, 270000])),
    data=st.data(),
    dtype=st.sampled_from([torch.float32, torch.float16, torch.bfloat16]),
    seed=st.integers(0, 2**31 - 1),
)
def test_gpu_every_form_keeps_a_rows_bits(n, data, dtype, seed):
    m = data.draw(st.integers(1, max(1, min(4096, 2**24 // n))), label="m")
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn((m, n), generator=g, device="cuda") * 4).to(dtype)
    dy = torch.randn((m, n), generator=g, device="cuda").to(dtype)
    step = aligned_rows(x)
    rows = sorted({0, (m - 1) // step * step, data.draw(st.integers(0, (m - 1) // step), label="row") * step})
    check_rows(x, dy, rows, batch_sizes=(1, data.draw(st.integers(1, m), label="batch")))
