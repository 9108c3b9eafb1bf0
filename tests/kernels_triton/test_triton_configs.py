"""Where a launch's config comes from, and the picks files: no timing on the call path.

A launch takes the user's tuned pick for its row-length bucket, else the committed pick of this
GPU's section of autotune_picks.json, else the rule (device properties). The user's picks file is
merged under a lock and written atomically, in the committed file's format (a card per GPU name): a
corrupt file is ignored with one warning. These run without a GPU: the choice is plain Python given a GPU name.
"""

import json
import multiprocessing
import sys
import warnings

import pytest
import torch
from kernels_triton import SoftmaxConfig, configs, launch, softmax, softmax_backward, tune
from kernels_triton.configs import choose, next_pow2, rule, warp_row_packs
from triton_helpers import DEVICE

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

GPU = "Test GPU 80GB"
COMMITTED_GPU = "NVIDIA H100 80GB HBM3"
H200 = "NVIDIA H200"


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
    assert [next_pow2(n) for n in (1, 2, 3, 600, 1024, 1025, 50257)] == [1, 2, 4, 1024, 1024, 2048, 65536]


@pytest.mark.parametrize("streams", [1, 2])
def test_rule_holds_the_row_once_while_it_fits(streams):
    for n in [1, 7, 600, 1000, 4097, 16384, 16385, 32768, 32769, 50257, 131072, 262145]:
        c = rule(streams, n)
        if c.warp_rows:  # whole packs, 1 to 8 a lane
            assert n % 4 == 0 and 128 <= n <= 1024 and c == SoftmaxConfig(4 * next_pow2(n), 4, warp_rows=True)
        elif c.block >= n:  # one pass: the tiles fit in registers
            assert configs.fits_in_registers(c.block, c.num_warps, streams), (n, c)
        else:  # looped: the widest looped tile that fits, with L2 hints
            assert c.l2_hints and configs.fits_in_registers(c.block, c.num_warps, 3), (n, c)
    assert rule(1, 32768).block == 32768 and rule(2, 32768).block < 32768
    assert rule(streams, 600, torch.bfloat16) == SoftmaxConfig(4096, 4, warp_rows=True)  # 3 packs a lane
    assert not rule(streams, 4096, torch.bfloat16).warp_rows  # 16 packs a lane: one pass


def test_bytes_in_flight_scale_with_the_cards_bandwidth(monkeypatch):
    """Little's law from the device's properties: an H100 (HBM3 2619 MHz x 5120 bits, 132 SMs) keeps
    32 KB an SM in flight; an H200 (3201 MHz x 6144 bits, 132 SMs) 47 KB, 1.47 times the bandwidth."""
    from types import SimpleNamespace

    cards = {0: (2619000, 5120), 1: (3201000, 6144), 2: (0, 0)}
    props = lambda i: SimpleNamespace(
        memory_clock_rate=cards[i][0], memory_bus_width=cards[i][1], multi_processor_count=132
    )  # noqa: E731, E501
    monkeypatch.setattr(torch.cuda, "get_device_properties", props)
    configs.bytes_in_flight_per_sm.cache_clear()
    configs.num_sms.cache_clear()
    try:
        assert configs.bytes_in_flight_per_sm(0) == 32 * 1024
        assert configs.bytes_in_flight_per_sm(1) == 47 * 1024
        assert configs.bytes_in_flight_per_sm(2) == configs.bytes_in_flight_per_sm(-1) == 32 * 1024
    finally:
        configs.bytes_in_flight_per_sm.cache_clear()
        configs.num_sms.cache_clear()


def test_committed_picks_are_keyed_by_card(cache_home, monkeypatch, tmp_path):
    """An H200 finds the H200 section, an H100 the H100's, another card the rule: each its own."""
    picks = tmp_path / "autotune_picks.json"
    tune.save([pick(n=600, rows=64, dtype="bfloat16", block=4096, warps=4, warp_rows=True)], picks, H200)
    tune.save([pick(n=600, rows=64, dtype="bfloat16", block=1024, warps=2)], picks, COMMITTED_GPU)
    tune.save([pick(n=1024, rows=64, dtype="bfloat16", block=2048, warps=8)], picks, H200)  # merged in
    doc = json.loads(picks.read_text())
    assert list(doc["cards"]) == [COMMITTED_GPU, H200] and len(doc["cards"][H200]["picks"]) == 2
    monkeypatch.setattr(configs, "PICKS_FILE", picks)
    configs.forget()
    for gpu, want in (
        (H200, SoftmaxConfig(4096, 4, warp_rows=True)),
        (COMMITTED_GPU, SoftmaxConfig(1024, 2)),
    ):
        assert choose("softmax_fwd", 1, 600, torch.bfloat16, gpu) == (want, "committed")
    got = choose("softmax_fwd", 1, 600, torch.bfloat16, "NVIDIA B200")
    assert got == (rule(1, 600, torch.bfloat16), "rule")
    tune.save(
        [pick(n=600, rows=64, dtype="bfloat16", block=512, warps=2)], configs.user_picks_path(H200), H200
    )
    got = choose("softmax_fwd", 1, 600, torch.bfloat16, H200)
    assert got == (SoftmaxConfig(512, 2), "tuned")  # the user's own tune wins


def test_committed_picks_serve_every_row_length_of_their_bucket(cache_home):
    for n in (600, 700, 1000):  # bucket 1024, tuned at 600 and 1024
        assert choose("softmax_fwd", 1, n, torch.float32, COMMITTED_GPU)[1] == "committed", n
    config, source = choose("softmax_fwd", 1, 100_000, torch.bfloat16, COMMITTED_GPU)
    assert source == "committed" and config.block < 100_000  # bucket 131072: the looped pick
    assert (
        choose("softmax_fwd", 1, 50257, torch.bfloat16, COMMITTED_GPU)[1] == "rule"
    )  # bucket 65536: never tuned
    assert choose("softmax_fwd", 1, 600, torch.float16, COMMITTED_GPU)[1] == "committed"
    assert choose("softmax_fwd", 1, 600, torch.float32, GPU)[1] == "rule"  # another GPU never takes them
    assert choose("softmax_fwd", 1, 600, torch.float32, None) == (configs.INTERPRETER_CONFIG, "interpreter")


def test_a_bucket_serves_each_row_length_its_own_pick(cache_home):
    """Bucket 1024 holds picks tuned at N = 600 and N = 1024, each at several row counts: each
    row length gets the config of the picks tuned at it (one for every row count), not
    whichever was listed last."""
    picks = [
        p
        for p in configs.committed()["cards"][COMMITTED_GPU]["picks"]
        if p["kernel"] == "softmax_fwd" and p["dtype"] == "bfloat16" and next_pow2(p["N"]) == 1024
    ]
    by_n = {n: configs.across_row_counts([p for p in picks if p["N"] == n]) for n in (600, 1024)}
    assert by_n[600] != by_n[1024]  # what this test relies on
    for n in (600, 1024):
        assert choose("softmax_fwd", 1, n, torch.bfloat16, COMMITTED_GPU) == (by_n[n], "committed")


def test_tuned_picks_are_saved_verified_and_preferred(cache_home):
    path = configs.user_picks_path(GPU)
    assert path.parent == cache_home / "kernel-lab" and "Test-GPU-80GB" in path.name
    tune.save([pick(n=600, rows=4)], path, GPU)
    tune.save([pick(kernel="softmax_bwd", n=5000, rows=64, block=1024, warps=4, l2_hints=True)], path, GPU)
    doc = json.loads(path.read_text())
    assert list(doc["cards"]) == [GPU] and len(doc["cards"][GPU]["picks"]) == 2
    assert choose("softmax_fwd", 1, 900, torch.float32, GPU) == (
        SoftmaxConfig(2048, 8),
        "tuned",
    )  # same bucket
    assert choose("softmax_bwd", 2, 8000, torch.float32, GPU) == (SoftmaxConfig(1024, 4, True), "tuned")
    tune.save([pick(n=600, rows=4, block=1024, warps=2)], path, GPU)  # same key: replaces
    tune.save([pick(n=1000, rows=4, block=512, warps=2)], path, GPU)  # the bucket's other N: kept beside
    assert len(json.loads(path.read_text())["cards"][GPU]["picks"]) == 3
    assert choose("softmax_fwd", 1, 600, torch.float32, GPU)[0] == SoftmaxConfig(1024, 2)
    assert choose("softmax_fwd", 1, 900, torch.float32, GPU)[0] == SoftmaxConfig(512, 2)  # the nearest N


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # truncated
        lambda text: "\x00garbage",
        lambda text: text.replace('"block": 2048', '"block": 100'),  # not a power of two
    ],
    ids=["truncated", "garbage", "invalid"],
)
def test_a_corrupt_picks_file_is_ignored_with_one_warning(cache_home, damage):
    path = configs.user_picks_path(GPU)
    tune.save([pick()], path, GPU)
    path.write_text(damage(path.read_text()))
    configs.forget()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert choose("softmax_fwd", 1, 600, torch.float32, GPU)[1] == "rule"
        choose("softmax_bwd", 2, 600, torch.float32, GPU)
    assert len(caught) == 1 and "ignoring picks" in str(caught[0].message)
    with pytest.warns(UserWarning, match="ignoring picks"):  # a later tune rewrites it whole
        tune.save([pick()], path, GPU)
    assert choose("softmax_fwd", 1, 600, torch.float32, GPU)[1] == "tuned"


def _save_many(args):
    path, first = args
    for n in range(first, first + 5):
        tune.save([pick(n=1 << n)], path, GPU)


def test_concurrent_tunes_keep_each_others_picks(cache_home):
    path = configs.user_picks_path(GPU)
    with multiprocessing.get_context("fork").Pool(4) as pool:
        pool.map(_save_many, [(path, 5 * i + 1) for i in range(4)])
    doc = json.loads(path.read_text())
    assert sorted(p["N"] for p in doc["cards"][GPU]["picks"]) == [1 << n for n in range(1, 21)]
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_tune_never_writes_the_packaged_picks_without_commit(capsys):
    before = configs.PICKS_FILE.read_bytes()
    with pytest.raises(SystemExit):
        tune.main(["--shape", "0", "5"])
    if not torch.cuda.is_available():  # one line, nothing written
        assert tune.main(["--sweep", "--commit"]) == 2 and "CUDA" in capsys.readouterr().err
    assert configs.PICKS_FILE.read_bytes() == before


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
