"""Where a launch's config comes from, and the picks files: no timing on the call path.

A launch takes the user's tuned pick for its row-length bucket, else a warp a row where
the few-rows rule applies, else the committed pick (on the GPU that tuned it), else the
heuristic. The user's picks file is merged under a lock, written atomically, and verified
by its SHA-256: a corrupt file is ignored with one warning. These run without a GPU: the choice is plain Python given a GPU name.
"""

import json
import multiprocessing
import sys
import warnings

import pytest
import torch
from kernels_triton import SoftmaxConfig, configs, launch, softmax, softmax_backward, tune
from kernels_triton.configs import bucket, choose, heuristic, warp_row_packs, warp_rows_config

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

GPU = "Test GPU 80GB"
COMMITTED_GPU = configs.committed()["gpu"]
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    configs.forget()
    yield tmp_path
    configs.forget()


def pick(kernel="softmax_fwd", n=600, rows=4, dtype="float32", block=2048, warps=8, **extra):
    return {
        "kernel": kernel,
        "N": n,
        "rows_per_sm": rows,
        "dtype": dtype,
        "block": block,
        "num_warps": warps,
        **extra,
    }


def test_buckets_are_powers_of_two():
    assert [bucket(n) for n in (1, 2, 3, 600, 1024, 1025, 50257)] == [1, 2, 4, 1024, 1024, 2048, 65536]


@pytest.mark.parametrize("streams", [1, 2])
def test_heuristic_holds_the_row_once_while_it_fits(streams):
    for n in [1, 7, 600, 1000, 4097, 16384, 16385, 32768, 32769, 50257, 131072, 262145]:
        c = heuristic(streams, n)
        if c.block >= n:  # one pass: the tiles fit in registers
            assert configs.fits_in_registers(c.block, c.num_warps, streams), (n, c)
        else:  # looped: the widest looped tile that fits, with L2 hints
            assert c.l2_hints and configs.fits_in_registers(c.block, c.num_warps, 3), (n, c)
    assert heuristic(1, 32768).block == 32768 and heuristic(2, 32768).block < 32768


@pytest.mark.skipif(not COMMITTED_GPU, reason="autotune_picks.json holds no picks")
def test_committed_picks_serve_every_row_length_of_their_bucket(cache_home):
    sms = 132
    for n in (600, 700, 1000):  # bucket 1024, tuned at 600 and 1024
        config, source = choose("softmax_fwd", 1, 65536, n, torch.float32, COMMITTED_GPU, sms)
        assert source == "committed", n
    config, source = choose("softmax_fwd", 1, 1024, 100_000, torch.bfloat16, COMMITTED_GPU, sms)
    assert source == "committed" and config.block < 100_000  # bucket 131072: the looped pick
    _, source = choose("softmax_fwd", 1, 64, 50257, torch.bfloat16, COMMITTED_GPU, sms)
    assert source == "heuristic"  # bucket 65536 was never tuned
    _, source = choose("softmax_fwd", 1, 64, 600, torch.float16, COMMITTED_GPU, sms)
    assert source == "committed"
    # another GPU never takes them
    assert choose("softmax_fwd", 1, 65536, 600, torch.float32, GPU, sms)[1] == "heuristic"
    # the interpreter: its one config
    assert choose("softmax_fwd", 1, 65536, 600, torch.float32, None, sms) == (
        configs.INTERPRETER_CONFIG,
        "interpreter",
    )


def test_a_bucket_serves_each_row_length_its_own_pick(cache_home):
    """Bucket 1024 holds picks tuned at N = 600 and N = 1024 for the same rows per SM: each
    row length gets the pick tuned at it, not whichever was listed last."""
    picks = [
        p
        for p in configs.committed()["picks"]
        if p["kernel"] == "softmax_fwd" and p["dtype"] == "bfloat16" and p["rows_per_sm"] == 64
    ]
    by_n = {p["N"]: SoftmaxConfig.of(p) for p in picks if bucket(p["N"]) == 1024}
    assert set(by_n) == {600, 1024} and by_n[600] != by_n[1024]  # what this test relies on
    for n, m in ((600, 65536), (1024, 32768)):
        assert choose("softmax_fwd", 1, m, n, torch.bfloat16, COMMITTED_GPU, 132) == (by_n[n], "committed")


def test_tuned_picks_are_saved_verified_and_preferred(cache_home):
    path = configs.user_picks_path(GPU)
    assert path.parent == cache_home / "kernel-lab" and "Test-GPU-80GB" in path.name
    tune.save([pick(n=600, rows=4)], path, GPU)
    tune.save([pick(kernel="softmax_bwd", n=5000, rows=64, block=1024, warps=4, l2_hints=True)], path, GPU)
    doc = json.loads(path.read_text())
    assert len(doc["picks"]) == 2 and doc["sha256"] == configs.digest(GPU, doc["picks"])
    config, source = choose("softmax_fwd", 1, 64 * 132, 900, torch.float32, GPU, 132)  # same bucket
    assert (config, source) == (SoftmaxConfig(2048, 8), "tuned")
    config, source = choose("softmax_bwd", 2, 132, 8000, torch.float32, GPU, 132)  # nearest rows per SM
    assert (config, source) == (SoftmaxConfig(1024, 4, True), "tuned")
    tune.save([pick(n=1000, rows=4, block=1024, warps=2)], path, GPU)  # same key: replaces
    assert len(json.loads(path.read_text())["picks"]) == 2
    assert choose("softmax_fwd", 1, 4 * 132, 600, torch.float32, GPU, 132)[0] == SoftmaxConfig(1024, 2)


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # truncated
        lambda text: text.replace('"block": 2048', '"block": 4096'),  # edited: the hash no longer matches
        lambda text: "\x00garbage",
        lambda text: text.replace('"block": 2048', '"block": 100'),  # invalid and unhashed
    ],
    ids=["truncated", "edited", "garbage", "invalid"],
)
def test_a_corrupt_picks_file_is_ignored_with_one_warning(cache_home, damage):
    path = configs.user_picks_path(GPU)
    tune.save([pick()], path, GPU)
    path.write_text(damage(path.read_text()))
    configs.forget()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert choose("softmax_fwd", 1, 4 * 132, 600, torch.float32, GPU, 132)[1] == "heuristic"
        choose("softmax_bwd", 2, 4 * 132, 600, torch.float32, GPU, 132)
    assert len(caught) == 1 and "ignoring tuned picks" in str(caught[0].message)
    with pytest.warns(UserWarning, match="ignoring tuned picks"):  # a later tune rewrites it whole
        tune.save([pick()], path, GPU)
    assert choose("softmax_fwd", 1, 4 * 132, 600, torch.float32, GPU, 132)[1] == "tuned"


def _save_many(args):
    path, first = args
    for n in range(first, first + 5):
        tune.save([pick(n=1 << n)], path, GPU)


def test_concurrent_tunes_keep_each_others_picks(cache_home):
    path = configs.user_picks_path(GPU)
    with multiprocessing.get_context("fork").Pool(4) as pool:
        pool.map(_save_many, [(path, 5 * i + 1) for i in range(4)])
    doc = json.loads(path.read_text())
    assert sorted(p["N"] for p in doc["picks"]) == [1 << n for n in range(1, 21)]
    assert doc["sha256"] == configs.digest(GPU, doc["picks"])
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_tune_never_writes_the_packaged_picks(capsys):
    before = configs.PICKS_FILE.read_bytes()
    with pytest.raises(SystemExit) as exit_:
        tune.main(["--out", str(configs.PICKS_FILE)])
    assert exit_.value.code == 2 and "packaged" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        tune.main(["--shape", "0", "5"])
    assert configs.PICKS_FILE.read_bytes() == before


def test_progress_lines_say_elapsed_and_eta(capsys, monkeypatch):
    monkeypatch.setattr(tune, "PROGRESS_EVERY_S", 0.0)
    progress = tune.Progress(4, out=sys.stdout)
    for i in range(4):
        progress.step(f"config {i}")
    lines = capsys.readouterr().out.splitlines()
    assert (
        len(lines) == 4
        and lines[-1].startswith("tune: 4/4 configs")
        and "elapsed" in lines[0]
        and "left" in lines[0]
    )


def test_repeated_calls_take_the_cached_template_and_still_check_their_arguments():
    module = sys.modules["kernels_triton.softmax"]  # `kernels_triton.softmax` is the function
    x = torch.randn(3, 40, device=DEVICE)
    first = softmax(x, 1)
    assert any(key[:3] in ((2, 40, 1), (2, 40, -1)) for key in module._FORWARD)
    torch.testing.assert_close(softmax(x, -1), first)
    torch.testing.assert_close(softmax(x.clone(), 1), torch.softmax(x, 1))
    with pytest.raises(TypeError, match="dim must be an int"):
        softmax(x, True)  # True == 1 and hashes alike: it must not find dim 1's template
    with pytest.raises(TypeError, match="int32"):
        softmax(x.int(), 1)
    # not dim 1's fp32 template
    torch.testing.assert_close(softmax(x.double(), 1), torch.softmax(x.double(), 1))
    with pytest.raises(IndexError):
        softmax(x, 2)
    y = torch.softmax(x, -1)
    dy = torch.randn_like(y)
    expected = torch._softmax_backward_data(dy, y, -1, torch.float32)
    for _ in range(2):
        torch.testing.assert_close(softmax_backward(y, dy), expected)
    with pytest.raises(ValueError, match="must match"):
        softmax_backward(y, dy[:, :-1])
    with pytest.raises(ValueError, match="must match"):
        softmax_backward(y, dy[:2])  # rows of the same N, the template's key: the shapes still checked


def test_warp_row_packs():
    """(width, packs, full): the packs that cover a row of N, and those inside it."""
    assert warp_row_packs(600, 4) == (128, 5, 4)  # 4 x 128 + 88
    assert warp_row_packs(1000, 4) == (128, 8, 7)
    assert warp_row_packs(1024, 4) == (128, 8, 8)
    assert warp_row_packs(128, 4) == (128, 1, 1)
    assert warp_row_packs(127, 4) == (128, 1, 0)
    assert warp_row_packs(600, 2) == (256, 3, 2)


def test_warp_rows_rule_bounds():
    """fp32, more than 16 and at most 64 rows an SM, 1 to 8 packs of 16 bytes a lane."""
    sms = 132
    rule = SoftmaxConfig(4096, 4, warp_rows=True)
    assert warp_rows_config(16 * sms, 600, torch.float32, sms) is None
    assert warp_rows_config(16 * sms + 1, 600, torch.float32, sms) == rule
    assert warp_rows_config(64 * sms, 600, torch.float32, sms) == rule
    assert warp_rows_config(64 * sms + 1, 600, torch.float32, sms) is None
    assert warp_rows_config(4096, 600, torch.bfloat16, sms) is None
    assert warp_rows_config(4096, 600, torch.float16, sms) is None
    assert warp_rows_config(4096, 1024, torch.float32, sms) == SoftmaxConfig(4096, 4, warp_rows=True)
    assert warp_rows_config(4096, 128, torch.float32, sms) == SoftmaxConfig(512, 4, warp_rows=True)
    for n in (127, 1025, 602):  # under a pack a lane; 9 packs; packs narrower than 16 bytes
        assert warp_rows_config(4096, n, torch.float32, sms) is None, n


def test_warp_rows_come_after_tuned_picks_and_before_committed_ones(cache_home):
    sms = 132
    assert choose("softmax_fwd", 1, 4096, 600, torch.float32, GPU, sms) == (
        SoftmaxConfig(4096, 4, warp_rows=True),
        "warp rows",
    )
    if COMMITTED_GPU:  # ahead of the committed pick tuned at exactly this launch
        assert choose("softmax_bwd", 2, 4096, 600, torch.float32, COMMITTED_GPU, sms)[1] == "warp rows"
    assert choose("softmax_fwd", 1, 4096, 600, torch.float32, None, sms)[1] == "interpreter"
    tune.save([pick(n=600, rows=32)], configs.user_picks_path(GPU), GPU)
    assert choose("softmax_fwd", 1, 4096, 600, torch.float32, GPU, sms) == (SoftmaxConfig(2048, 8), "tuned")


def test_warp_rows_config_fields_and_checks():
    config = SoftmaxConfig(4096, 4, warp_rows=True)
    assert config.label() == "4096/4/W"
    assert config.fields() == {"block": 4096, "num_warps": 4, "warp_rows": True}
    assert SoftmaxConfig.of(config.fields()) == config
    with pytest.raises(ValueError, match="not both"):
        SoftmaxConfig(4096, 4, l2_hints=True, warp_rows=True)
    meta = launch.tile_meta(config, 4097, 600, [600, 600], 4)
    assert (meta["ROWS"], meta["BLOCK_N"], meta["PACKS"], meta["FULL"], meta["NEEDS_MASK"]) == (
        4,
        128,
        5,
        4,
        True,
    )
    assert launch.tile_meta(SoftmaxConfig(4096, 4), 4096, 600, [600, 600], 4)["PACKS"] == 0
    with pytest.raises(ValueError, match="warp_rows needs block = num_warps x next_pow2"):
        launch.tile_meta(SoftmaxConfig(2048, 4, warp_rows=True), 4096, 600, [600, 600], 4)
