"""kernels_triton.softmax against the float64 references, forward and backward.

Without a GPU these run under Triton's interpreter (set by tests/conftest.py): small
grids, fp32 and fp16 (the interpreter has no bf16), both paths (one pass and the looped
online softmax, forced with a small block). With a GPU the same tests run on CUDA, and
the `gpu` ones add bf16, large Hypothesis sweeps and the benchmark shapes.

Kernel-level tests launch into outputs filled with NaN, so an element a kernel does not
write fails the comparison.

One file for the op's behaviour (values, dims, dtypes, errors, autograd, compile, GPU launches);
accuracy, configs, float64 and batch invariance have their own files.
"""

import json
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
    autotune_picks,
    configs,
    launch,
    softmax,
    softmax_,
    softmax_backward,
)
from labtools.ops import softmax_backward_ref, softmax_ref, tolerance

softmax_module = sys.modules["kernels_triton.softmax"]  # the name kernels_triton.softmax is the op

# The interpreter evaluates masked-off lanes too (rows past M hold -inf - -inf), and numpy warns.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if DEVICE == "cuda" else [])
SWEEP = [
    (4096, 600),
    (65536, 600),
    (262144, 600),
    (32768, 1024),
    (16384, 4096),
    (8192, 8192),
    (4096, 32768),
    (1024, 131072),
    (256, 262144),
]


def _randn(shape, dtype, seed, scale=1.0, device=DEVICE):
    """Seeded normals, drawn where they are used (the benchmark shapes hold up to 157M
    elements: drawing them on the host would take seconds each)."""
    g = torch.Generator(device=device).manual_seed(seed)
    return (scale * torch.randn(shape, generator=g, device=device, dtype=torch.float32)).to(dtype)


def assert_close(got: torch.Tensor, expected: np.ndarray, dtype):
    got = got.detach().cpu().double().numpy()
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, **tolerance(dtype))


def launch_poisoned(name, inputs, config, batch_invariant=True):
    """Run one kernel on 2D inputs into a NaN-filled output; returns the output."""
    out = torch.full_like(inputs[0], float("nan"))
    launch.launch(name, [*inputs, out], *inputs[0].shape, config, batch_invariant)
    return out


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
    x = _randn((m, n), dtype, seed, scale)
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
    y = torch.softmax(_randn((m, n), torch.float64, seed, 3.0), -1).to(dtype)
    dy = _randn((m, n), dtype, seed + 1)
    dx = launch_poisoned("softmax_bwd", [y, dy], config)
    assert_close(dx, softmax_backward_ref(y.cpu().double().numpy(), dy.cpu().double().numpy()), dtype)


@pytest.mark.parametrize("l2_hints", [False, True], ids=["plain", "l2_hints"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_looped_path_with_more_rows_than_programs(dtype, l2_hints):
    """A row of 20000 in 8192-wide tiles (two full, one ragged), and a grid smaller than M:
    on the CPU one 'SM' and 32 KiB in flight give 1 (fp32) or 2 (fp16) programs for 3 rows."""
    config = SoftmaxConfig(8192, 8, l2_hints)
    x = _randn((3, 20000), dtype, 7, 5.0)
    y = launch_poisoned("softmax_fwd", [x], config)
    assert_close(y, softmax_ref(x.cpu().double().numpy()), dtype)
    dy = _randn((3, 20000), dtype, 8)
    dx = launch_poisoned("softmax_bwd", [y, dy], config)
    assert_close(dx, softmax_backward_ref(y.cpu().double().numpy(), dy.cpu().double().numpy()), dtype)


def test_strided_rows():
    """Row strides larger than N (a column slice) on inputs and outputs."""
    x = _randn((5, 300), torch.float32, 3)[:, 17:217]
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
    x = _randn(shape, dtype, seed, 2.0).requires_grad_(True)
    y = softmax(x, dim)
    x64 = x.detach().cpu().double().numpy()
    y_ref = softmax_ref(x64, axis=dim)
    assert y.shape == x.shape and y.dtype == dtype
    assert_close(y, y_ref, dtype)
    dy = _randn(shape, dtype, seed + 1)
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
    base = _randn((6, 12), torch.float32, 11, 3.0)
    x = make(base)
    before = base.clone()
    for dim in (0, 1, -1):
        assert_close(softmax(x, dim), softmax_ref(x.cpu().double().numpy(), axis=dim), torch.float32)
    assert torch.equal(base, before)  # the input is not written


def test_zero_and_one_dimensional():
    x = _randn((7,), torch.float32, 1)
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


def warp_rows(n: int) -> SoftmaxConfig:
    """The warp-a-row config of rows of N, 4 rows a program (configs.warp_rows_config's form)."""
    return SoftmaxConfig(4 * configs.next_pow2(n), 4, warp_rows=True)


WARP_ROW_CASES = [(d, n) for d in DTYPES for n in (100, 128, 300, 600, 1000, 1024)]


@pytest.mark.parametrize("m", [8, 7], ids=["whole-programs", "rows-past-M"])
@pytest.mark.parametrize("dtype,n", WARP_ROW_CASES, ids=[f"{str(d)[6:]}-{n}" for d, n in WARP_ROW_CASES])
def test_warp_rows_kernels_match_reference(dtype, n, m):
    """A warp a row (kernels.py): full packs unmasked, a ragged last pack (none at 128 and
    1024 in fp32; no full pack at 100), a last program with rows past M; adversarial rows:
    the maximum first, last, repeated, an offset of 1e4, magnitudes to FLT_MAX, -inf
    entries; poisoned outputs."""
    x = _randn((m, n), torch.float32, n + m, 3.0)
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
    dy = _randn((m, n), dtype, n + m + 1)
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
    shape=st.lists(st.integers(1, 40), min_size=1, max_size=3),
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
        x = _randn(shape, dtype, seed + k, 4.0)
        expected = softmax_ref(x.cpu().double().numpy(), axis=dim)
        address = x.data_ptr()
        assert softmax_(x, dim, config=config) is x and x.data_ptr() == address
        assert_close(x, expected, dtype)


def test_in_place_views_write_only_the_view():
    base = _randn((6, 12), torch.float32, 5, 3.0)
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
    x = _randn((3, 5), torch.float32, 2).requires_grad_(True)
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
    with pytest.raises(TypeError, match="batch_invariant must be a bool"):
        softmax(torch.ones(2, 3, device=DEVICE), batch_invariant=None)
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
    with pytest.raises(ValueError, match="meta"):  # dy elsewhere: refused, not read through a foreign pointer
        softmax_backward(torch.ones(2, 3, device=DEVICE), torch.ones(2, 3, device="meta"))
    with pytest.raises(ValueError, match="power of two"):
        SoftmaxConfig(block=100)


OFFLINE_CASES = {  # name: (kernel, M, N, dtype, config), as the committed picks launch them
    "fwd 4096x600 bf16": ("softmax_fwd", 4096, 600, "bfloat16", (1024, 2, False)),
    "bwd 16384x4096 fp32": ("softmax_bwd", 16384, 4096, "float32", (4096, 4, False)),
    "fwd 1024x131072 fp32, looped, L2 hints": ("softmax_fwd", 1024, 131072, "float32", (8192, 32, True)),
    "bwd 4096x32768 bf16, looped, L2 hints": ("softmax_bwd", 4096, 32768, "bfloat16", (8192, 32, True)),
    # configs.warp_rows_config's launches: a row's max and sum in its warp, no block barrier
    "fwd 4096x600 fp32, a warp a row": ("softmax_fwd", 4096, 600, "float32", (4096, 4, False, True)),
    "bwd 8193x1000 fp32, a warp a row": ("softmax_bwd", 8193, 1000, "float32", (4096, 4, False, True)),
}


def test_kernels_compile_for_sm90_without_a_gpu(without_interpreter):
    """What the interpreter never checks, compiled here for sm_90 by Triton's own ptxas
    (in a process without TRITON_INTERPRET): every global load and store 16 bytes wide
    (rows of 600 included), no local memory (spills), the looped path's L2 hints reaching
    the SASS (LDG.E.EL / .EF) only where asked for, and a warp a row without block barriers."""
    code = (
        "import json, torch\n"
        "from kernels_triton import SoftmaxConfig\n"
        "from sass_tools import compile_for, memory_instructions, sass\n"
        f"cases = {OFFLINE_CASES!r}\n"
        "texts = {k: sass(compile_for(n, m, c, getattr(torch, d), SoftmaxConfig(*cfg)))"
        " for k, (n, m, c, d, cfg) in cases.items()}\n"
        "print(json.dumps({k: {**memory_instructions(t), 'BAR': t.count('BAR.SYNC')} for k, t in texts.items()}))\n"
    )
    found = without_interpreter(code)
    for case, counts in found.items():
        hinted, warp_rows = OFFLINE_CASES[case][4][2], OFFLINE_CASES[case][4][3:] == (True,)
        barriers = counts.pop("BAR")
        assert barriers == 0 or not warp_rows, (case, barriers)
        assert counts.get("LDG.E.128", 0) + counts.get("LDG.E.EL.128", 0) > 0, (case, counts)
        assert all(op.endswith(".128") for op in counts if op.startswith(("LDG", "STG"))), (case, counts)
        assert "LDL" not in counts and "STL" not in counts, (case, counts)
        assert any(".EL." in op or ".EF." in op for op in counts) == hinted, (case, counts)


def test_cpu_tensor_without_interpreter_says_how():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["CUDA_VISIBLE_DEVICES"] = ""
    code = "import torch, kernels_triton; kernels_triton.softmax(torch.ones(2, 3))"
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "ValueError" in run.stderr and "TRITON_INTERPRET=1" in run.stderr


# --- configs and picks --------------------------------------------------------------------


def test_config_space():
    seed_grid = {(b, w) for b in (256, 512, 1024, 2048) for w in (2, 4, 8)}

    def pruned(streams, n):
        return {(c.block, c.num_warps) for c in configs.candidates(streams, n) if not c.l2_hints}

    assert seed_grid < pruned(1, 600)  # the seed's autotune grid, and up to 8 rows a program:
    assert max(b for b, _ in pruned(1, 600)) == 8 * 1024 and max(b for b, _ in pruned(2, 600)) == 8192
    warp = {(c.block, c.num_warps) for c in configs.candidates(1, 600, 2) if c.warp_rows}
    assert warp == {(2048, 2), (4096, 4), (8192, 8)}  # a warp a row, 2 to 8 rows a program
    assert not [c for c in configs.candidates(1, 602, 2) if c.warp_rows]  # not whole 16-byte packs
    assert seed_grid < pruned(1, 4096) and {b for b, _ in pruned(1, 4096)} == {
        256,
        512,
        1024,
        2048,
        4096,
        8192,
    }
    assert max(b for b, _ in pruned(1, 32768)) == 32768  # forward holds a 32768 row in registers
    assert max(b for b, _ in pruned(2, 32768)) < 32768  # backward (two tiles) loops there
    assert max(b for b, _ in pruned(1, 262144)) < 262144  # long rows: looped tiles only
    for b, w in pruned(2, 16384) - seed_grid:
        assert configs.fits_in_registers(b, w, 2 if b >= 16384 else 3)

    def hinted(n):  # configs with the looped path's L2 hints
        return {(c.block, c.num_warps) for c in configs.candidates(1, n) if c.l2_hints}

    assert not hinted(2048)  # every hinted block holds the row: one pass, nothing to hint
    assert hinted(262144) and all(b < 262144 for b, _ in hinted(262144))


def test_autotune_picks_report():
    softmax(_randn((3, 50), torch.float32, 0))
    picks = autotune_picks()
    assert set(picks) == {"mode", "committed", "tuned", "used"}
    assert "cards" in picks["committed"]
    if configs.INTERPRET:
        assert "interpreter" in picks["mode"] and "1024" in picks["mode"]
        assert picks["tuned"] == []


def test_committed_picks_file_is_well_formed():
    doc = configs.committed()
    assert doc["cards"]["NVIDIA H100 80GB HBM3"]["picks"]  # a section per GPU name
    for card in doc["cards"].values():
        assert {"date", "command", "versions", "picks"} <= set(card) and card["versions"]["triton"]
        for p in card["picks"]:
            assert {"kernel", "N", "rows_per_sm", "dtype", "block", "num_warps"} <= set(p)
            SoftmaxConfig.of(p)


def test_registered_with_labtools():
    from labtools import registry

    fwd, bwd = registry.get("triton.softmax"), registry.get("triton.softmax_backward")
    assert (fwd.op, fwd.backend, fwd.device) == ("softmax", "triton", "cuda")
    assert (bwd.op, bwd.backend) == ("softmax_backward", "triton")
    x = _randn((4, 33), torch.float32, 5)
    y = fwd.fn(x)
    assert_close(y, softmax_ref(x.cpu().double().numpy()), torch.float32)
    dy = _randn((4, 33), torch.float32, 6)
    assert_close(
        bwd.fn(y, dy),
        softmax_backward_ref(y.cpu().double().numpy(), dy.cpu().double().numpy()),
        torch.float32,
    )


FORMS_ON_CPU = [("one_pass", (3, 40)), ("looped", (3, 40)), ("warp_rows", (5, 40))]


@pytest.mark.parametrize("form, shape", FORMS_ON_CPU, ids=[f for f, _ in FORMS_ON_CPU])
def test_each_form_is_registered_under_its_own_name(form, shape):
    """`lab bench --impls triton.<form>` times one form alone, whatever the route would pick
    (the cluster form, sm_90 only, in the GPU test below)."""
    from labtools import registry

    fwd, bwd = registry.get(f"triton.{form}"), registry.get(f"triton.{form}_backward")
    assert (fwd.op, bwd.op, fwd.backend) == ("softmax", "softmax_backward", "triton")
    assert fwd.supports(shape, "float32")
    x = _randn(shape, torch.float32, 7, 3.0)
    y = fwd.fn(x)
    assert_close(y, softmax_ref(x.cpu().double().numpy()), torch.float32)
    dy = _randn(shape, torch.float32, 8)
    expected = softmax_backward_ref(y.cpu().double().numpy(), dy.cpu().double().numpy())
    assert_close(bwd.fn(y, dy), expected, torch.float32)


@pytest.mark.gpu
@pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9, reason="needs sm_90"
)
@pytest.mark.parametrize("form", ["one_pass", "looped", "cluster"])
def test_gpu_each_form_alone_at_a_long_row(form):
    from labtools import registry

    x = _randn((16, 65536), torch.bfloat16, 9, 3.0)
    y = registry.get(f"triton.{form}").fn(x)
    assert_close(y, softmax_ref(x.cpu().double().numpy()), torch.bfloat16)
    dy = _randn((16, 65536), torch.bfloat16, 10)
    expected = softmax_backward_ref(y.cpu().double().numpy(), dy.cpu().double().numpy())
    assert_close(registry.get(f"triton.{form}_backward").fn(y, dy), expected, torch.bfloat16)


def test_tune_needs_a_gpu(capsys):
    if torch.cuda.is_available():
        pytest.skip("on a GPU the tuner runs (see test_gpu_tune)")
    from kernels_triton.tune import main

    assert main([]) == 2
    assert "needs a CUDA device" in capsys.readouterr().err


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
    x = _randn((m, n), dtype, seed, 4.0)
    y = launch_poisoned("softmax_fwd", [x], config)
    assert_close(y, softmax_ref(x.cpu().double().numpy()), dtype)
    dy = _randn((m, n), dtype, seed + 1)
    dx = launch_poisoned("softmax_bwd", [y, dy], config)
    assert_close(dx, softmax_backward_ref(y.cpu().double().numpy(), dy.cpu().double().numpy()), dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("shape", SWEEP, ids=[f"{m}x{n}" for m, n in SWEEP])
def test_gpu_benchmark_shapes(shape, dtype):
    """The default configs at every benchmark shape: every element written (poisoned
    outputs, none left NaN), 64 sampled rows against the float64 reference."""
    m, n = shape
    x = _randn(shape, dtype, m + n, 4.0)
    y = launch_poisoned("softmax_fwd", [x], None)
    dy = _randn(shape, dtype, m + n + 1)
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
    x = _randn((m, n), dtype, 17, 6.0)
    expected = torch.softmax(x.float(), -1).to(dtype)
    rows = slice(0, 8)
    expected_rows = softmax_ref(x[rows].cpu().double().numpy())
    assert softmax_(x) is x
    assert_close(x[rows], expected_rows, dtype)
    torch.testing.assert_close(x.float(), expected.float(), **tolerance(dtype))


@pytest.mark.gpu
def test_gpu_unseen_row_length_launches_without_timing(monkeypatch, tmp_path):
    """A row length no pick names launches at once with its bucket's pick or the rule:
    nothing is timed (do_bench would fail the test here)."""
    import triton.testing

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no tuned picks
    configs.forget()
    monkeypatch.setattr(triton.testing, "do_bench", lambda *a, **k: pytest.fail("timed on the call path"))
    for n in (777, 50257, 70001):
        x = _randn((100, n), torch.bfloat16, n)
        assert_close(softmax(x), softmax_ref(x.cpu().double().numpy()), torch.bfloat16)
        if launch.route("softmax_fwd", 100, n, x.dtype, x.device) != "tiles":
            continue  # the cluster kernels, which take no picks
        used = [p for p in autotune_picks()["used"] if p["kernel"] == "softmax_fwd" and p["N"] == n]
        assert used and used[0]["source"] in ("committed", "rule")
    configs.forget()


@pytest.mark.gpu
def test_gpu_committed_picks_are_used(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no tuned picks
    configs.forget()
    card = configs.committed()["cards"].get(torch.cuda.get_device_name())
    if card is None:
        pytest.skip(f"autotune_picks.json holds no picks for {torch.cuda.get_device_name()}")
    for pick in card["picks"]:
        m, n = pick["tuned_at"]
        x = torch.rand(m, n, device="cuda", dtype=getattr(torch, pick["dtype"]))
        inputs = [x] if pick["kernel"] == "softmax_fwd" else [x, x]
        out = launch_poisoned(pick["kernel"], inputs, None)
        assert not out.isnan().any()
        if launch.route(pick["kernel"], m, n, x.dtype, x.device) != "tiles":
            continue  # launched by kernels_triton.cluster, which takes no picks
        sms = launch.num_sms(x.get_device())
        used = launch.USED[(pick["kernel"], n, configs.rows_per_sm(m, sms), pick["dtype"])]
        # batch invariant: one committed config for every row count of a row length
        config, _ = configs.choose_invariant(pick["kernel"], 1, n, x.dtype, torch.cuda.get_device_name())
        assert used == {**config.fields(), "source": "committed"}, (pick, used)
        launch_poisoned(pick["kernel"], inputs, None, batch_invariant=False)
        used = launch.USED[(pick["kernel"], n, configs.rows_per_sm(m, sms), pick["dtype"])]
        # the row count's own pick; the few-rows rule comes before the committed picks
        expected = "warp rows" if configs.warp_rows_config(m, n, x.dtype, sms) else "committed"
        assert used["source"] == expected, (pick, used)
    configs.forget()


@pytest.mark.gpu
@pytest.mark.parametrize("n", [600, 1000, 1024])
def test_gpu_warp_rows_rule(n, monkeypatch, tmp_path):
    """Without batch invariance, fp32 launches of 16-64 rows an SM take a warp a row, both
    directions, whole programs and a last one with rows past M: every element written, right
    against float64."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no tuned picks
    configs.forget()
    sms = launch.num_sms(torch.cuda.current_device())
    for m in (32 * sms, 32 * sms + 3):
        x = _randn((m, n), torch.float32, m + n, 4.0)
        x[::3, 0] = 40.0
        x[1::3, -1] = 40.0
        y = launch_poisoned("softmax_fwd", [x], None, batch_invariant=False)
        dy = _randn((m, n), torch.float32, m + n + 1)
        dx = launch_poisoned("softmax_bwd", [y, dy], None, batch_invariant=False)
        for kernel in ("softmax_fwd", "softmax_bwd"):
            used = launch.USED[(kernel, n, configs.rows_per_sm(m, sms), "float32")]
            assert used == {**warp_rows(n).fields(), "source": "warp rows"}
        assert not y.isnan().any() and not dx.isnan().any()
        assert_close(y, softmax_ref(x.cpu().double().numpy()), torch.float32)
        ys, dys = y.cpu().double().numpy(), dy.cpu().double().numpy()
        assert_close(dx, softmax_backward_ref(ys, dys), torch.float32)
    configs.forget()


def test_forget_plans_empties_every_plan_cache():
    """What a tune calls once it has written new picks: no template made before survives, so the
    next call of every shape plans with the picks as they are now."""
    x = _randn((4, 64), torch.float32, 5)
    softmax(x)
    softmax_(x.clone())
    y = softmax(x.clone().requires_grad_())
    y.backward(torch.ones_like(y))
    assert softmax_module._FORWARD and softmax_module._IN_PLACE and launch._TEMPLATES
    assert {id(d) for d in (softmax_module._FORWARD, softmax_module._BACKWARD, softmax_module._IN_PLACE)} <= {
        id(d) for d in launch.PLAN_CACHES
    }
    launch.forget_plans()
    assert not any(launch.PLAN_CACHES)


@pytest.mark.gpu
def test_gpu_tune(tmp_path, monkeypatch):
    from kernels_triton.tune import main

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    packaged = configs.PICKS_FILE.read_bytes()
    x = torch.randn(256, 1000, device="cuda")
    softmax(x)  # planned before the tune, with the committed pick ...
    softmax(x, config=SoftmaxConfig(1024, 8))  # ... and the bucket's last record says "given"
    assert main(["--shape", "256", "600", "--dtype", "float32", "--dtype", "bfloat16"]) == 0
    path = configs.user_picks_path(torch.cuda.get_device_name())
    doc = json.loads(path.read_text())
    assert doc["gpu"] == torch.cuda.get_device_name()
    assert doc["sha256"] == configs.digest(doc["gpu"], doc["picks"])
    assert {(p["kernel"], p["dtype"]) for p in doc["picks"]} == {
        (k, d) for k in ("softmax_fwd", "softmax_bwd") for d in ("float32", "bfloat16")
    }
    assert configs.PICKS_FILE.read_bytes() == packaged
    softmax(x)  # the same bucket: the tuned pick serves, though this shape was planned before
    rows = configs.rows_per_sm(256, launch.num_sms(x.get_device()))  # not another test's launch of N = 1000
    used = [
        p
        for p in autotune_picks()["used"]
        if (p["kernel"], p["N"], p["rows_per_sm"], p["dtype"]) == ("softmax_fwd", 1000, rows, "float32")
    ]
    assert used[0]["source"] == "tuned"
    configs.forget()


@pytest.mark.gpu
def test_gpu_agrees_with_the_cuda_c_kernels():
    """The seed's cross-check: Triton and every registered CUDA C softmax agree to 1e-4."""
    from labtools import registry

    cuda_c = [
        i for i in registry.implementations("softmax", backend="cuda-c") if i.accepts((512, 600), "float32")
    ]
    if not cuda_c:
        pytest.skip("no CUDA C softmax registered (kernels_cuda not installed here)")
    x = _randn((512, 600), torch.float32, 42, 3.0)
    y = softmax(x)
    for impl in cuda_c:
        got = torch.as_tensor(impl.fn(x), device="cuda")
        assert torch.allclose(got, y, rtol=1e-4, atol=1e-4), (
            f"{impl.name}: max |diff| {(got - y).abs().max()}"
        )


@pytest.mark.gpu
def test_gpu_autotune_picks_reach_the_manifest_in_labtools_convention():
    from labtools import registry
    from labtools.manifest import pick_for

    x = torch.randn(512, 600, device="cuda")
    softmax(x)
    picks = registry.get("triton.softmax").meta["autotune_picks"]()
    assert all(set(p) == {"key", "config"} and {"N", "dtype"} <= set(p["key"]) for p in picks)
    picked = pick_for(picks, 600, "float32")
    assert picked is not None and {"BLOCK", "num_warps"} <= set(picked)


def test_autotune_picks_report_the_config_each_launch_used():
    from labtools import registry
    from labtools.manifest import pick_for

    n = 600 + 8 * np.random.default_rng().integers(1, 50)  # a row length no other test launches
    softmax(torch.randn(3, int(n), device=DEVICE))
    used = [p for p in autotune_picks()["used"] if p["N"] == n and p["kernel"] == "softmax_fwd"]
    assert len(used) == 1 and used[0]["source"] in ("interpreter", "tuned", "committed", "rule")
    picks = registry.get("triton.softmax").meta["autotune_picks"]()
    assert pick_for(picks, int(n), "float32")["BLOCK"] == used[0]["block"]


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
