"""The configs launches get and what reports them: the config space, autotune_picks() and the
labtools registration, the committed picks (launched and compiled at their configs), the tuner.
Where a config comes from is tested without a GPU in test_triton_configs.py."""

import json
import sys

import numpy as np
import pytest
import torch
from kernels_triton import SoftmaxConfig, autotune_picks, configs, launch, softmax, softmax_
from labtools.ops import softmax_backward_ref, softmax_ref
from triton_helpers import DEVICE, assert_close, launch_poisoned, randn

softmax_module = sys.modules["kernels_triton.softmax"]  # the name kernels_triton.softmax is the op

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
    softmax(randn((3, 50), torch.float32, 0))
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
    x = randn((4, 33), torch.float32, 5)
    y = fwd.fn(x)
    assert_close(y, softmax_ref(x.cpu().double().numpy()), torch.float32)
    dy = randn((4, 33), torch.float32, 6)
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
    x = randn(shape, torch.float32, 7, 3.0)
    y = fwd.fn(x)
    assert_close(y, softmax_ref(x.cpu().double().numpy()), torch.float32)
    dy = randn(shape, torch.float32, 8)
    expected = softmax_backward_ref(y.cpu().double().numpy(), dy.cpu().double().numpy())
    assert_close(bwd.fn(y, dy), expected, torch.float32)


@pytest.mark.gpu
def test_gpu_agrees_with_the_cuda_c_kernels():
    """The seed's cross-check: Triton and every registered CUDA C softmax agree to 1e-4."""
    from labtools import registry

    cuda_c = [
        i for i in registry.implementations("softmax", backend="cuda-c") if i.accepts((512, 600), "float32")
    ]
    if not cuda_c:
        pytest.skip("no CUDA C softmax registered (kernels_cuda not installed here)")
    x = randn((512, 600), torch.float32, 42, 3.0)
    y = softmax(x)
    for impl in cuda_c:
        got = torch.as_tensor(impl.fn(x), device="cuda")
        assert torch.allclose(got, y, rtol=1e-4, atol=1e-4), (
            f"{impl.name}: max |diff| {(got - y).abs().max()}"
        )


@pytest.mark.gpu
@pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9, reason="needs sm_90"
)
@pytest.mark.parametrize("form", ["one_pass", "looped", "cluster"])
def test_gpu_each_form_alone_at_a_long_row(form):
    from labtools import registry

    x = randn((16, 65536), torch.bfloat16, 9, 3.0)
    y = registry.get(f"triton.{form}").fn(x)
    assert_close(y, softmax_ref(x.cpu().double().numpy()), torch.bfloat16)
    dy = randn((16, 65536), torch.bfloat16, 10)
    expected = softmax_backward_ref(y.cpu().double().numpy(), dy.cpu().double().numpy())
    assert_close(registry.get(f"triton.{form}_backward").fn(y, dy), expected, torch.bfloat16)


def test_tune_needs_a_gpu(capsys):
    if torch.cuda.is_available():
        pytest.skip("on a GPU the tuner runs (see test_gpu_tune)")
    from kernels_triton.tune import main

    assert main([]) == 2
    assert "needs a CUDA device" in capsys.readouterr().err


OFFLINE_CASES = {  # name: (kernel, M, N, dtype, config), as the committed picks launch them
    "fwd 4096x600 bf16": ("softmax_fwd", 4096, 600, "bfloat16", (1024, 2, False)),
    "bwd 16384x4096 fp32": ("softmax_bwd", 16384, 4096, "float32", (4096, 4, False)),
    "fwd 1024x131072 fp32, looped, L2 hints": ("softmax_fwd", 1024, 131072, "float32", (8192, 32, True)),
    "bwd 4096x32768 bf16, looped, L2 hints": ("softmax_bwd", 4096, 32768, "bfloat16", (8192, 32, True)),
    # a warp a row (configs.rule's for short rows): a row's max and sum in its warp, no block barrier
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


@pytest.mark.gpu
def test_gpu_unseen_row_length_launches_without_timing(monkeypatch, tmp_path):
    """A row length no pick names launches at once with its bucket's pick or the rule:
    nothing is timed (do_bench would fail the test here)."""
    import triton.testing

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no tuned picks
    launch.forget_plans()
    monkeypatch.setattr(triton.testing, "do_bench", lambda *a, **k: pytest.fail("timed on the call path"))
    for n in (777, 50257, 70001):
        x = randn((100, n), torch.bfloat16, n)
        assert_close(softmax(x), softmax_ref(x.cpu().double().numpy()), torch.bfloat16)
        if launch.route("softmax_fwd", 100, n, x.dtype, x.device) != "tiles":
            continue  # the cluster kernels, which take no picks
        used = [p for p in autotune_picks()["used"] if p["kernel"] == "softmax_fwd" and p["N"] == n]
        assert used and used[0]["source"] in ("committed", "rule")
    configs.forget()


@pytest.mark.gpu
def test_gpu_committed_picks_are_used(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no tuned picks
    launch.forget_plans()  # every layout planned (and its config recorded) anew
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
        used = launch.USED[(pick["kernel"], n, pick["dtype"])]
        # one committed config for every row count of a row length
        config, _ = configs.choose(pick["kernel"], 1, n, x.dtype, torch.cuda.get_device_name())
        assert used == {**config.fields(), "source": "committed"}, (pick, used)
    configs.forget()


def test_forget_plans_empties_every_plan_cache():
    """What a tune calls once it has written new picks: no template made before survives, so the
    next call of every shape plans with the picks as they are now."""
    x = randn((4, 64), torch.float32, 5)
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
    softmax(x, config=SoftmaxConfig(1024, 8))  # ... and the row length's last record says "given"
    assert main(["--shape", "256", "600", "--dtype", "float32", "--dtype", "bfloat16"]) == 0
    path = configs.user_picks_path(torch.cuda.get_device_name())
    cards = json.loads(path.read_text())["cards"]
    assert list(cards) == [torch.cuda.get_device_name()]
    assert {(p["kernel"], p["dtype"]) for p in cards[torch.cuda.get_device_name()]["picks"]} == {
        (k, d) for k in ("softmax_fwd", "softmax_bwd") for d in ("float32", "bfloat16")
    }
    assert configs.PICKS_FILE.read_bytes() == packaged
    softmax(x)  # the same bucket: the tuned pick serves, though this shape was planned before
    assert launch.USED[("softmax_fwd", 1000, "float32")]["source"] == "tuned"
    configs.forget()


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
    registry.get("triton.looped").fn(torch.randn(3, int(n), device=DEVICE))  # a form timed alone ...
    assert registry.get("triton.softmax").meta["autotune_picks"]() == picks  # ... is not what softmax used
