"""kernels_triton.split_row against float64 references, forward and backward.

Without a GPU these run under Triton's interpreter, which runs programs one after
another: a program never finds a later peer's partial published, so after its bounded
wait it computes that partial itself (the fallback), and the later programs of the
group find the earlier ones' words -- both halves of the exchange run. Small chunks
(16..1024 elements) give many programs a row. Loading ahead (SplitConfig.prefetch) only
matters where a program takes several rows: `few_sms` makes the planner see a GPU of 4
SMs, so a handful of rows comes in several waves at a cost the interpreter can run. With
a GPU the `gpu` tests add bf16, the real cross-program exchange at the default configs
and the benchmark shapes, with and without loading ahead, concurrent streams and
CUDA-graph replays.

Every launch writes into an output filled with NaN, so an element left unwritten fails.
"""

import contextlib
import dataclasses

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from kernels_triton import split_row as sr
from labtools.ops import softmax_backward_ref, softmax_ref, tolerance

# The interpreter computes in NumPy, which warns where the kernels mean to overflow to +-inf
# (x - max for inputs near FLT_MAX) or to form NaN (rows of -inf, lanes masked off).
pytestmark = [
    pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning"),
]

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if DEVICE == "cuda" else [])
TWO_DTYPES = [torch.float32, torch.bfloat16 if DEVICE == "cuda" else torch.float16]  # fp32 and a 16-bit one
FLT_MAX = float(np.finfo(np.float32).max)
inf, nan = float("inf"), float("nan")


def _randn(shape, dtype, seed, scale=1.0):
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    return (scale * torch.randn(shape, generator=g, device=DEVICE, dtype=torch.float32)).to(dtype)


def run_forward(x, config=None, spin_limit=None):
    y = torch.full_like(x, nan)
    sr.forward(x, y, config=config, spin_limit=spin_limit)
    return y


def run_backward(y, dy, config=None, spin_limit=None):
    dx = torch.full_like(y, nan)
    sr.backward(y, dy, dx, config=config, spin_limit=spin_limit)
    return dx


def assert_close(got, expected, dtype):
    got = got.detach().cpu().double().numpy()
    np.testing.assert_allclose(got, expected, **tolerance(dtype))


def check_forward(x, config=None, spin_limit=None):
    y = run_forward(x, config, spin_limit)
    assert_close(y, softmax_ref(x.cpu().double().numpy()), x.dtype)
    return y


def check_backward(y, dy, config=None, spin_limit=None):
    dx = run_backward(y, dy, config, spin_limit)
    ref = softmax_backward_ref(y.cpu().double().numpy(), dy.cpu().double().numpy())
    assert_close(dx, ref, y.dtype)
    return dx


def at_most_16_chunks(n, config):
    """The interpreter runs a group's programs one after another, each computing the partials
    of the chunks after its own: quadratic in the chunks a row, so at most 16 of them here."""
    chunk = max(config.chunk, sr._next_pow2(sr._cdiv(n, 16)))
    return dataclasses.replace(config, chunk=chunk)


small_configs = st.builds(
    sr.SplitConfig,
    chunk=st.sampled_from([16, 64, 256, 1024]),
    num_warps=st.sampled_from([1, 4]),
    prefetch=st.sampled_from([None, False, True]),
)


@contextlib.contextmanager
def few_sms(sms=4):
    """Plans made inside see a device of `sms` SMs (one program each under the interpreter,
    unless the config says more): a row of a few chunks leaves room for few groups, so a few
    rows take several waves. Plans and occupancies made inside are dropped after."""
    sr._scratch(torch.device(DEVICE))  # made before, at the size every other test sees
    with pytest.MonkeyPatch.context() as mp:
        real = sr._device
        mp.setattr(sr, "_device", lambda device: dataclasses.replace(real(device), sms=sms))
        mp.setattr(sr, "_PLANS", {})
        mp.setattr(sr, "_OCCUPANCY", {})
        yield


@given(
    m=st.integers(1, 5),
    n=st.integers(1, 2000),
    dtype=st.sampled_from(DTYPES),
    config=small_configs,
    scale=st.sampled_from([0.1, 1.0, 30.0]),
    seed=st.integers(0, 2**31 - 1),
)
def test_forward_matches_reference(m, n, dtype, config, scale, seed):
    config = at_most_16_chunks(n, config)
    check_forward(_randn((m, n), dtype, seed, scale), config)


@given(
    m=st.integers(1, 5),
    n=st.integers(1, 2000),
    dtype=st.sampled_from(DTYPES),
    config=small_configs,
    seed=st.integers(0, 2**31 - 1),
)
def test_backward_matches_reference(m, n, dtype, config, seed):
    config = at_most_16_chunks(n, config)
    y = torch.softmax(_randn((m, n), torch.float32, seed, 3.0).double(), -1).to(dtype)
    check_backward(y, _randn((m, n), dtype, seed + 1), config)


def adversarial_rows(n: int) -> torch.Tensor:
    """Rows of length n (a multiple of 4) that break naive kernels, each chunk boundary
    crossed when the chunk is n/4."""
    g = torch.Generator().manual_seed(n)
    base = torch.randn(n, generator=g)
    rows = []
    r = base.clone()
    r[0] = 50.0  # max first
    rows.append(r)
    r = base.clone()
    r[-1] = 50.0  # max last
    rows.append(r)
    r = base.clone()
    r[[1, n // 2, n - 2]] = 30.0  # max repeated, in different chunks
    rows.append(r)
    rows.append(torch.full((n,), 3e38))  # above FLT_MAX / log2(e): every element 1/n
    r = base * 1e37
    r[3] = FLT_MAX
    r[n - 1] = -FLT_MAX  # the full finite range in one row
    rows.append(r)
    r = base - 1000.0
    r[: n // 4] = -inf  # a whole chunk of -inf, the rest far below 0
    rows.append(r)
    r = torch.full((n,), -inf)
    r[n - 1] = -5.0  # one finite value: exactly one-hot
    rows.append(r)
    rows.append(torch.full((n,), -inf))  # all -inf: NaN, as torch
    r = base.clone()
    r[n // 3] = inf  # +inf: NaN
    rows.append(r)
    r = base.clone()
    r[n // 2 + 1] = nan  # NaN: NaN
    rows.append(r)
    r = base.clone()
    r[: n // 4] = -inf
    r[5] = nan  # NaN in a chunk of otherwise -inf, whose max is then -inf on a GPU: NaN
    rows.append(r)
    return torch.stack(rows).to(DEVICE)


@pytest.mark.parametrize("n", [64, 4000])
def test_adversarial_rows_like_torch_and_float64(n):
    x = adversarial_rows(n)
    config = sr.SplitConfig(n // 4 if n == 64 else 1024, 4)
    y = run_forward(x, config)
    torch.testing.assert_close(y.cpu(), torch.softmax(x.double(), -1).float().cpu(), equal_nan=True)
    assert torch.equal(y.isnan().cpu(), torch.softmax(x.cpu(), -1).isnan())
    finite = ~torch.softmax(x.cpu(), -1).isnan().any(-1)
    assert_close(y[finite], softmax_ref(x[finite].cpu().double().numpy()), torch.float32)


def test_compensated_sums_on_adversarial_rows():
    """SplitConfig(compensated=True), the fp32 forward's default on a GPU (the interpreter runs it
    only here: its custom reductions go an element at a time): the same softmax as the plain sums,
    rows with the max last, huge, -inf chunks, one-hot, all -inf, +inf and NaN included."""
    x = adversarial_rows(2048)[[1, 3, 5, 6, 7, 8, 9]]
    config = sr.SplitConfig(512, 4, compensated=True)
    y = run_forward(x, config)
    torch.testing.assert_close(y.cpu(), torch.softmax(x.double(), -1).float().cpu(), equal_nan=True)
    finite = ~torch.softmax(x.cpu(), -1).isnan().any(-1)
    assert_close(y[finite], softmax_ref(x[finite].cpu().double().numpy()), torch.float32)
    assert sr._plan("fwd", [x, y], config, None).meta["COMPENSATED"]
    assert sr._plan("fwd", [x, y], None, None).meta["COMPENSATED"] == (DEVICE == "cuda")
    assert not sr._plan("fwd", [x.half(), y.half()], None, None).meta["COMPENSATED"]
    assert "COMPENSATED" not in sr._plan("bwd", [x, x, y], None, None).meta


def test_error_no_worse_than_torch():
    """fp32: the error against float64, ||y - ref|| / ||ref|| per row, within F.softmax's
    on the same input (up to rounding noise), for rows whose max is last, huge or repeated."""
    x = adversarial_rows(4000)[:5]
    x = torch.cat([x, _randn((2, 4000), torch.float32, 11, 30.0)])
    ref = softmax_ref(x.cpu().double().numpy())
    ours = run_forward(x, sr.SplitConfig(1024, 4)).cpu().double().numpy()
    theirs = torch.softmax(x, -1).cpu().double().numpy()
    err = np.linalg.norm(ours - ref, axis=1) / np.linalg.norm(ref, axis=1)
    err_torch = np.linalg.norm(theirs - ref, axis=1) / np.linalg.norm(ref, axis=1)
    assert np.all(err <= 2 * err_torch + 2e-7), (err, err_torch)


@pytest.mark.parametrize("n", [2**17, 2**18 + 1])
def test_rows_of_2_17_and_2_18_plus_1(n):
    x = _randn((2, n), torch.float32, n, 8.0)
    x[0, -1] = 60.0
    config = None if DEVICE == "cuda" else sr.SplitConfig(32768, 4)  # 4 and 9 chunks a row
    y = check_forward(x, config)
    check_backward(y, _randn((2, n), torch.float32, n + 1), config)


@pytest.mark.parametrize(
    "n, chunk, warps", [(2000, 256, 4), (131072, 4096, 2), (262144, 4096, 4), (5000, 1024, 1)]
)
def test_every_thread_polls_its_own_words(n, chunk, warps):
    """The lanes the peers' words are polled in cover every thread of a program once and
    every chunk of the row: no word is loaded by two threads (whose polls could disagree)."""
    lanes = sr._meta(n, sr.SplitConfig(chunk, warps), 1)["LANES"]
    assert lanes >= 32 * warps and lanes >= -(-n // chunk) and lanes & (lanes - 1) == 0


def test_forced_fallback_every_wave():
    """spin_limit=0: no program waits; each computes every missing partial from memory."""
    x = _randn((3, 2000), torch.float32, 5, 4.0)
    before = sr.fallback_count(x.device)
    y = check_forward(x, sr.SplitConfig(256, 4), spin_limit=0)
    check_backward(y, _randn((3, 2000), torch.float32, 6), sr.SplitConfig(256, 4), spin_limit=0)
    assert sr.fallback_count(x.device) > before


def test_repeated_calls_do_not_leak_state():
    """Alternating shapes, chunkings and directions on one scratch buffer: every result is
    fresh (the epoch moves past each launch's tags), and the epoch advances."""
    scratch = sr._scratch(torch.device(DEVICE))
    start = int(scratch[sr.EPOCH])
    cases = [((4, 1000), sr.SplitConfig(256, 4)), ((2, 600), sr.SplitConfig(64, 1)), ((5, 1000), None)]
    for i in range(6):
        (m, n), config = cases[i % len(cases)]
        x = _randn((m, n), torch.float32, 100 + i, 5.0)
        y = check_forward(x, config)
        check_backward(y, _randn((m, n), torch.float32, 200 + i), config)
    assert int(scratch[sr.EPOCH]) > start
    assert int(scratch[sr.FINISHED]) == 0


def test_epoch_wraps_to_1_and_clears_the_words():
    scratch = sr._scratch(torch.device(DEVICE))
    scratch[sr.EPOCH] = sr.EPOCH_LIMIT - 1
    x = _randn((3, 1000), torch.float32, 9)
    check_forward(x, sr.SplitConfig(256, 4))
    assert int(scratch[sr.EPOCH]) == 1
    assert not scratch[sr.HEADER :].any()
    check_forward(_randn((3, 1000), torch.float32, 10), sr.SplitConfig(256, 4))
    assert int(scratch[sr.EPOCH]) == 1 + 1  # 3 rows in 3 groups: one wave, one tag


def test_strided_rows():
    x = _randn((3, 1500), torch.float32, 12)[:, 100:1100]
    y = torch.full((3, 1200), nan, device=DEVICE)[:, :1000]
    sr.forward(x, y, config=sr.SplitConfig(256, 4))
    assert_close(y, softmax_ref(x.cpu().double().numpy()), torch.float32)


# --- loading ahead: several waves ------------------------------------------------------

# (M, N, chunk, programs an SM, waves the plan must have). With 4 SMs, N = 50 or 64 in chunks
# of 32 (split 2) leaves room for 2 groups at one program an SM, 4 at two, 8 at four; N = 100
# or 128 (split 4) for one group: a row a wave.
WAVE_CASES = [
    (1, 64, 32, 1, 1),  # one row
    (3, 64, 32, 4, 1),  # fewer rows than the groups that would fit: one wave
    (4, 64, 32, 1, 2),  # a multiple of the groups
    (5, 64, 32, 1, 3),  # not a multiple: the last wave is short (groups 2: rows 0 2 4, 1 3)
    (7, 50, 32, 1, 4),  # masked columns, 4 waves
    (4, 100, 32, 1, 4),  # masked columns, one group: every row a wave
    (3, 128, 32, 1, 3),  # unmasked, one group
    (10, 64, 32, 2, 3),  # two programs an SM: 4 groups, rows 4 + 4 + 2
]


@pytest.mark.parametrize("prefetch", [False, True])
@pytest.mark.parametrize("dtype", TWO_DTYPES)
@pytest.mark.parametrize("case", WAVE_CASES, ids=lambda c: f"{c[0]}x{c[1]}/{c[2]}/{c[3]}")
def test_prefetch_waves_forward_backward(case, dtype, prefetch):
    """Both settings of prefetch, forward and backward, against float64, where a program
    takes one row, several rows, a last row past M (nothing loaded ahead) and masked columns."""
    m, n, chunk, per_sm, waves = case
    config = sr.SplitConfig(chunk, 1, programs_per_sm=per_sm, prefetch=prefetch)
    with few_sms():
        x = _randn((m, n), dtype, 1000 * m + n, 6.0)
        plan = sr._plan("fwd", [x, x], config, None)
        assert plan.config.prefetch is prefetch and plan.meta["PREFETCH"] is prefetch
        assert sr._cdiv(m, plan.groups) == waves
        check_forward(x, config)
        y = torch.softmax(x.double(), -1).to(dtype)  # the backward's input, not the forward's output
        check_backward(y, _randn((m, n), dtype, 1000 * m + n + 1), config)


@pytest.mark.parametrize("prefetch", [False, True])
@pytest.mark.parametrize("n", [64, 4000])
def test_prefetch_adversarial_rows(n, prefetch):
    """The adversarial rows, forward and backward, 4 chunks a row and one group: each of the
    10 rows is its own wave, so every row but the first was loaded ahead (with prefetch)."""
    x = adversarial_rows(n)
    # one program an SM on 4 SMs: the 4 chunks of a row are the only group, on the GPU too
    config = sr.SplitConfig(n // 4 if n == 64 else 1024, 4, programs_per_sm=1, prefetch=prefetch)
    with few_sms():
        assert sr._plan("fwd", [x, x], config, None).groups == 1
        y = run_forward(x, config)
        expected = torch.softmax(x.double(), -1)
        torch.testing.assert_close(y.cpu(), expected.float().cpu(), equal_nan=True)
        assert torch.equal(y.isnan().cpu(), torch.softmax(x.cpu(), -1).isnan())
        finite = ~expected.isnan().any(-1)
        assert_close(y[finite], softmax_ref(x[finite].cpu().double().numpy()), torch.float32)
        # the backward from the finite rows' outputs: one-hot rows, zeros, huge and tiny values
        y = expected[finite].float().contiguous()
        check_backward(y, _randn(tuple(y.shape), torch.float32, n + 3, 4.0), config)


@given(
    m=st.integers(1, 9),
    n=st.integers(1, 300),
    dtype=st.sampled_from(DTYPES),
    chunk=st.sampled_from([16, 32, 64, 128]),
    per_sm=st.sampled_from([1, 2]),
    prefetch=st.sampled_from([None, False, True]),
    seed=st.integers(0, 2**31 - 1),
)
def test_prefetch_matches_reference_over_waves(m, n, dtype, chunk, per_sm, prefetch, seed):
    """Any rows on 4 SMs (several waves whenever m exceeds the groups), any prefetch."""
    chunk = max(chunk, sr._next_pow2(sr._cdiv(n, 4 * per_sm)))  # a row fits the 4 * per_sm programs
    config = sr.SplitConfig(chunk, 1, programs_per_sm=per_sm, prefetch=prefetch)
    with few_sms():
        x = _randn((m, n), dtype, seed, 8.0)
        y = check_forward(x, config)
        check_backward(y, _randn((m, n), dtype, seed + 1), config)


def test_prefetch_default_by_dtype_and_waves():
    """prefetch=None: the dtype's entry in PREFETCH where rows take several waves, off where
    they all fit one wave (there is no next row to load). Split 2 on 4 programs: 2 groups."""
    with few_sms():
        for dtype in DTYPES:
            for m, expect in ((2, False), (9, sr.PREFETCH[dtype])):
                x = torch.zeros((m, 64), dtype=dtype, device=DEVICE)
                plan = sr._plan("bwd", [x, x, x], sr.SplitConfig(32, 1, programs_per_sm=1), None)
                assert plan.config.prefetch is expect, (dtype, m)
                assert plan.meta["PREFETCH"] is expect
    assert sr.PREFETCH[torch.float16] and sr.PREFETCH[torch.bfloat16]
    with pytest.raises(ValueError, match="prefetch"):
        sr.SplitConfig(64, 1, prefetch=1)


def test_applies():
    dev = torch.device(DEVICE)
    sms = sr._device(dev).sms
    assert sr.applies(1024, 131072, torch.float32, dev)
    assert sr.applies(256, 262144, torch.bfloat16, dev, backward=True)
    assert sr.applies(8, 8192, torch.float16, dev)  # few rows
    assert not sr.applies(65536, 600, torch.float32, dev)  # short rows
    assert not sr.applies(4 * sms, 8192, torch.float32, dev)  # many rows that fit one program
    assert not sr.applies(4096, 32768, torch.float32, dev)  # the one-pass forward holds these rows
    assert sr.applies(4096, 32768, torch.float32, dev, backward=True)  # its fp32 backward loops
    assert not sr.applies(4096, 32768, torch.bfloat16, dev, backward=True)
    assert not sr.applies(1024, 131072, torch.float64, dev)
    assert not sr.applies(0, 131072, torch.float32, dev)
    assert not sr.applies(4, 10**9, torch.float32, dev)  # more programs a row than fit


def test_long_rows_get_wider_programs_with_the_same_values_a_thread():
    """A row that would need more programs than SMs gets chunks and warps doubled together, up
    to MAX_WARPS; past that it does not split. Few rows still halve them, as before."""
    for config in (sr.FORWARD_CONFIG, sr.BACKWARD_CONFIG):
        per_thread = config.chunk // (32 * config.num_warps)
        for n in (131072, 700_001, 2_000_000, 10**7):
            sized = sr._sized_config(config, 4, n, 132)
            assert sized.chunk // (32 * sized.num_warps) == per_thread
            assert sized.num_warps <= sr.MAX_WARPS
            fits = sr._cdiv(n, sr._widened(config, n, 132).chunk) <= 132
            assert fits == (sr._cdiv(n, config.chunk * sr.MAX_WARPS // config.num_warps) <= 132)
            if fits and sr._cdiv(n, config.chunk) > 132:
                assert sr._cdiv(n, sized.chunk) <= 132 < sr._cdiv(n, sized.chunk // 2)
        assert sr._sized_config(config, 1, 262144, 132).chunk == sr.MIN_CHUNK  # one row: every SM busy
        assert sr._sized_config(config, 256, 262144, 132) == config


def test_bad_inputs_are_refused():
    x = torch.ones(2, 8, device=DEVICE)
    with pytest.raises(TypeError, match="x2d must be a torch.Tensor"):
        sr.forward(np.ones((2, 8), np.float32), x)
    with pytest.raises(ValueError, match="y2d is .*must match"):
        sr.forward(x, torch.ones(2, 9, device=DEVICE))
    with pytest.raises(ValueError, match="dx2d is .*must match"):
        sr.backward(x, x, torch.ones(2, 8, dtype=torch.float16, device=DEVICE))
    with pytest.raises(TypeError, match="float64"):
        sr.forward(x.double(), x.double())
    with pytest.raises(ValueError, match="2-D"):
        sr.forward(torch.ones(2, 2, 2, device=DEVICE), torch.ones(2, 2, 2, device=DEVICE))
    with pytest.raises(ValueError, match="2-D"):
        sr.forward(x.t(), x.t())
    with pytest.raises(ValueError, match="y2d overlaps x2d"):
        sr.forward(x, x)
    with pytest.raises(ValueError, match="dx2d overlaps dy2d"):
        wide = torch.ones(2, 16, device=DEVICE)
        sr.backward(x, wide[:, :8], wide[:, 4:12])
    with pytest.raises(ValueError, match="power of two"):
        sr.SplitConfig(1000, 4)


# --- GPU: the real exchange --------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize(
    "shape",
    [(1024, 131072), (256, 262144), (4096, 32768), (3, 2**18 + 1), (7, 50257), (1, 8192), (130, 65536)],
)
def test_gpu_default_configs(shape, dtype):
    x = _randn(shape, dtype, shape[1], 6.0)
    y = run_forward(x)
    ref_rows = slice(0, 64)  # a float64 reference of 2**27 elements would take long on the host
    assert_close(y[ref_rows], softmax_ref(x[ref_rows].cpu().double().numpy()), dtype)
    assert not y.isnan().any()
    torch.testing.assert_close(y.float(), torch.softmax(x.float(), -1).to(dtype).float(), **tolerance(dtype))
    dy = _randn(shape, dtype, shape[1] + 1)
    dx = run_backward(y, dy)
    ref = softmax_backward_ref(y[ref_rows].cpu().double().numpy(), dy[ref_rows].cpu().double().numpy())
    assert_close(dx[ref_rows], ref, dtype)
    assert not dx.isnan().any()


@pytest.mark.gpu
@given(
    m=st.integers(1, 300),
    n=st.integers(4096, 70000),
    dtype=st.sampled_from(DTYPES),
    chunk=st.sampled_from([1024, 4096, 8192]),
    seed=st.integers(0, 2**31 - 1),
)
def test_gpu_sweep(m, n, dtype, chunk, seed):
    config = sr.SplitConfig(chunk, 4)
    x = _randn((m, n), dtype, seed, 10.0)
    y = check_forward(x, config)
    check_backward(y, _randn((m, n), dtype, seed + 1), config)


@pytest.mark.gpu
@pytest.mark.parametrize("prefetch", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(256, 262144), (1000, 50257)])
def test_gpu_prefetch_both_ways(shape, dtype, prefetch):
    """The real exchange with and without loading ahead at the default chunking, over many
    waves (unmasked and masked rows), against float64 (first rows) and torch (all rows)."""
    m, n = shape
    sms = sr._device(torch.device(DEVICE)).sms
    fwd, bwd = (
        dataclasses.replace(sr.default_config(d, m, n, sms), prefetch=prefetch) for d in ("fwd", "bwd")
    )
    x = _randn(shape, dtype, n + 5, 6.0)
    for direction, config, tensors in (("fwd", fwd, [x, x]), ("bwd", bwd, [x, x, x])):
        plan = sr._plan(direction, tensors, config, None)
        assert plan.config.prefetch is prefetch and plan.groups < m  # several waves
    y = run_forward(x, fwd)
    rows = slice(0, 16)
    assert_close(y[rows], softmax_ref(x[rows].cpu().double().numpy()), dtype)
    torch.testing.assert_close(y.float(), torch.softmax(x.float(), -1).to(dtype).float(), **tolerance(dtype))
    dy = _randn(shape, dtype, n + 6)
    dx = run_backward(y, dy, bwd)
    ref = softmax_backward_ref(y[rows].cpu().double().numpy(), dy[rows].cpu().double().numpy())
    assert_close(dx[rows], ref, dtype)
    expected = torch._softmax_backward_data(dy.float(), y.float(), -1, torch.float32).to(dtype)
    torch.testing.assert_close(dx.float(), expected.float(), **tolerance(dtype))


@pytest.mark.gpu
def test_gpu_concurrent_streams():
    """Two streams at once, each with its own scratch buffer, many launches each."""
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    xs = [_randn((64, 65536), torch.float32, s, 5.0) for s in (1, 2)]
    torch.cuda.synchronize()
    outs = [[], []]
    for _ in range(10):
        for i, s in enumerate(streams):
            with torch.cuda.stream(s):
                outs[i].append(run_forward(xs[i]))
    torch.cuda.synchronize()
    for i in range(2):
        expected = torch.softmax(xs[i], -1)
        for y in outs[i]:
            torch.testing.assert_close(y, expected, **tolerance(torch.float32))


@pytest.mark.gpu
def test_gpu_cuda_graph_replays():
    """The epoch is on the device: a captured launch replayed gets fresh tags each time."""
    x = _randn((256, 65536), torch.float32, 3)
    y = torch.empty_like(x)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        sr.forward(x, y)  # compile and allocate the scratch outside the capture
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=s):
        sr.forward(x, y)
    for seed in range(4):
        x.copy_(_randn(x.shape, torch.float32, 50 + seed, 4.0))
        y.fill_(nan)
        graph.replay()
        torch.testing.assert_close(y, torch.softmax(x, -1), **tolerance(torch.float32))


@pytest.mark.gpu
def test_gpu_public_op_on_split_rows_on_a_second_stream():
    """A plan made on one stream launches the compiled kernel directly with that stream's
    exchange buffer; called on another stream it must not use that buffer (it goes through
    the JIT, which finds the other stream's): both streams busy at once, both right."""
    from kernels_triton import launch, softmax

    m, n = 256, 65536
    assert launch.split_row_applies("softmax_fwd", m, n, torch.float32, torch.device(DEVICE))
    x = _randn((m, n), torch.float32, 31, 6.0)
    expected = softmax_ref(x.cpu().double().numpy())
    assert_close(softmax(x), expected, torch.float32)  # planned on the default stream
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    outs = []
    with torch.cuda.stream(side):
        for _ in range(8):
            outs.append(softmax(x))
    for _ in range(8):
        outs.append(softmax(x))
    torch.cuda.synchronize()
    for y in outs:
        assert_close(y, expected, torch.float32)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(
    "shape",
    [(1024, 131072), (256, 262144), (64, 50257), (8, 128257), (1, 262144), (4, 700_001), (2, 1_500_001)],
)  # 700001: wider backward programs; 1500001: wider forward ones too
def test_gpu_public_op_takes_the_split_path(shape, dtype):
    """kernels_triton.softmax and its autograd backward would send these shapes to split_row
    (both go to kernels_triton.cluster first where that applies: sm_90, 32768-262144 columns,
    tests/kernels_triton/test_cluster.py) and agree with float64 (first rows) and with torch
    (all rows)."""
    from kernels_triton import launch, softmax

    m, n = shape
    assert launch.split_row_applies("softmax_fwd", m, n, dtype, torch.device(DEVICE))
    assert launch.split_row_applies("softmax_bwd", m, n, dtype, torch.device(DEVICE))
    x = _randn(shape, dtype, n + 7, 6.0).requires_grad_()
    y = softmax(x)
    rows = slice(0, 16)
    assert_close(y[rows], softmax_ref(x[rows].detach().cpu().double().numpy()), dtype)
    dy = _randn(shape, dtype, n + 8)
    (dx,) = torch.autograd.grad(y, x, dy)
    ref = softmax_backward_ref(y[rows].detach().cpu().double().numpy(), dy[rows].cpu().double().numpy())
    assert_close(dx[rows], ref, dtype)
    expected = torch.softmax(x.detach().float(), -1)
    torch.testing.assert_close(y.detach().float(), expected.to(dtype).float(), **tolerance(dtype))
    assert not dx.isnan().any()
