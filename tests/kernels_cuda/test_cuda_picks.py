"""auto's plan on a card: its committed picks (cuda_picks.json, a section per GPU name), the user's
tuned ones first, else the rule, whose packs a thread follow the device's bandwidth. Plain Python
over shapes: no GPU."""

import json
from dataclasses import replace

import pytest
from kernels_cuda import backward_plans, picks, softmax_plans, tune
from kernels_cuda import softmax_variants as variants

H100 = replace(variants.H100, name="NVIDIA H100 80GB HBM3", bandwidth=2 * 2619e6 * 5120 / 8)
H200 = replace(variants.H100, name="NVIDIA H200", bandwidth=2 * 3201e6 * 6144 / 8)
B200 = replace(variants.H100, name="NVIDIA B200", bandwidth=2 * 3201e6 * 6144 / 8)


@pytest.fixture
def picks_files(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(picks, "PICKS_FILE", tmp_path / "cuda_picks.json")
    picks.forget()
    picks.USED.clear()
    yield tmp_path / "cuda_picks.json"
    picks.forget()


def spec(rows):
    return dict(rows.spec.constants)


def pick(direction="forward", dtype="bfloat16", n=600, plan="fused:16"):
    return {"direction": direction, "dtype": dtype, "N": n, "plan": plan}


def test_the_rules_packs_follow_the_cards_bandwidth():
    """Little's law: an H100 keeps 2 packs a thread (the defaults it was tuned at), an H200 with
    about 1.47 times the bandwidth on as many SMs 3; a card of unknown bandwidth the defaults."""
    assert picks.fused_packs(H100) == 2 and picks.fused_packs(H200) == 3
    assert picks.for_card(softmax_plans.AUTO, H100) == softmax_plans.AUTO
    assert picks.for_card(softmax_plans.AUTO, variants.H100) == softmax_plans.AUTO  # bandwidth unknown
    more = picks.for_card(softmax_plans.AUTO, H200)
    assert (more.fused_packs_f32, more.fused_packs_16bit) == (3, 3)
    assert picks.for_card(replace(softmax_plans.AUTO, fused_packs_16bit=8), H200).fused_packs_16bit == 8


def test_the_h200_rule_gives_short_rows_a_warp_of_three_packs():
    """65536x600 bf16: 75 packs a row. An H100 holds them in 64 threads x 2 packs; the H200's rule
    a warp x 3 packs, twice the rows (bytes) in flight an SM, as QuACK's tiler does."""
    h100 = softmax_plans.row_plan("auto", 600, "bfloat16", 8, H100)
    h200 = softmax_plans.row_plan("auto", 600, "bfloat16", 8, H200)
    assert (spec(h100)["TPR"], spec(h100)["ITEMS"]) == (64, 2)
    assert (spec(h200)["TPR"], spec(h200)["ITEMS"]) == (32, 3)
    back = backward_plans.row_plan("auto", 600, "bfloat16", 8, H200)
    assert (spec(back)["TPR"], spec(back)["ITEMS"]) == (32, 3)


@pytest.mark.parametrize("device", [H100, H200])
def test_every_rule_plan_is_compiled_offline(device):
    """The offline compile covers the rule at every card's packs a thread."""
    forward, backward = set(softmax_plans.specializations()), set(backward_plans.specializations())
    for n in (1, 7, 100, 600, 1000, 1024, 4096, 8192, 16384, 32768, 50257, 131072):
        for dtype in ("float32", "bfloat16"):
            vec = variants.pack_width(dtype, n, (0, 0), (n, n))
            assert softmax_plans.row_plan("auto", n, dtype, vec, device).spec in forward, (n, dtype)
            assert backward_plans.row_plan("auto", n, dtype, vec, device).spec in backward, (n, dtype)


def test_committed_picks_are_keyed_by_card_and_the_users_win(picks_files):
    tune.save([pick(plan="fused:16"), pick("backward", plan="fused:64")], picks_files, H200.name)
    tune.save([pick(plan="fused:128")], picks_files, H100.name)
    tune.save([pick(n=1024, plan="fused:32")], picks_files, H200.name)  # merged into the H200's section
    doc = json.loads(picks_files.read_text())
    assert list(doc["cards"]) == [H100.name, H200.name] and len(doc["cards"][H200.name]["picks"]) == 3
    picks.forget()
    rows = softmax_plans.row_plan("auto", 600, "bfloat16", 8, H200)
    assert (spec(rows)["TPR"], spec(rows)["ITEMS"]) == (16, 5)
    assert picks.USED[("forward", 600, "bfloat16")] == {
        "card": H200.name,
        "source": "committed",
        "plan": rows.spec.name.split(".", 1)[1],
    }
    assert (
        spec(softmax_plans.row_plan("auto", 700, "bfloat16", 8, H200))["TPR"] == 16
    )  # the bucket's nearest N
    assert spec(softmax_plans.row_plan("auto", 1000, "bfloat16", 8, H200))["TPR"] == 32
    assert spec(backward_plans.row_plan("auto", 600, "bfloat16", 8, H200))["TPR"] == 64
    assert spec(softmax_plans.row_plan("auto", 600, "bfloat16", 8, H100))["TPR"] == 128
    assert spec(softmax_plans.row_plan("auto", 600, "bfloat16", 8, B200))["TPR"] == 32  # no picks: the rule
    assert picks.USED[("forward", 600, "bfloat16")]["source"] == "rule"
    assert spec(softmax_plans.row_plan("auto", 601, "bfloat16", 1, H200))["VEC"] == 1
    assert picks.USED[("forward", 601, "bfloat16")]["source"] == "rule"  # not whole packs: the rule serves
    tune.save([pick(plan="fused:64")], picks.user_path(H200.name), H200.name)  # this user's own tune
    picks.forget()
    assert spec(softmax_plans.row_plan("auto", 600, "bfloat16", 8, H200))["TPR"] == 64
    assert picks.USED[("forward", 600, "bfloat16")]["source"] == "tuned"
    (entry,) = [e for e in picks.used("forward") if e["key"] == {"N": 600, "dtype": "bfloat16"}]
    assert entry["config"]["source"] == "tuned" and entry["config"]["card"] == H200.name


def test_a_pick_that_cannot_serve_a_row_leaves_it_to_the_rule(picks_files):
    tune.save(
        [pick(plan="fused:1"), pick("backward", dtype="float32", n=131072, plan="cluster:2")],
        picks_files,
        H200.name,
    )
    picks.forget()
    rule = softmax_plans._rule(
        600, "bfloat16", 8, H200, picks.for_card(softmax_plans.AUTO, H200), False, None
    )
    assert softmax_plans.row_plan("auto", 600, "bfloat16", 8, H200) == rule  # 75 packs a thread: too many
    assert (
        backward_plans.row_plan("auto", 131072, "float32", 4, H200).group != 2
    )  # 2 chunks of 256 KB do not fit
    assert picks.USED[("backward", 131072, "float32")]["source"] == "rule"


def test_a_malformed_picks_file_is_ignored_with_a_warning(picks_files):
    picks_files.write_text('{"cards": {"NVIDIA H200": {"picks": [{"direction": "sideways"}]}}}')
    with pytest.warns(UserWarning, match="ignoring CUDA picks"):
        softmax_plans.row_plan("auto", 600, "bfloat16", 8, H200)
    assert picks.USED[("forward", 600, "bfloat16")]["source"] == "rule"


def test_the_tune_picks_the_least_mean_slowdown_over_row_counts():
    """fused:32 is fastest at 65536 rows, fused:64 at 4096, but fused:32 loses less on average."""

    def rec(m, cand, us):
        return {
            "direction": "forward",
            "dtype": "bfloat16",
            "shape": [m, 600],
            "candidate": cand,
            "median_us": us,
        }

    records = [rec(65536, "fused:32", 40.0), rec(65536, "fused:64", 48.0), rec(65536, "fused:16", float("nan")),
               rec(4096, "fused:32", 8.0), rec(4096, "fused:64", 7.8), rec(4096, "fused:16", 7.0)]  # fmt: skip
    (p,) = tune.choose(records)
    assert (p["direction"], p["dtype"], p["N"], p["plan"]) == ("forward", "bfloat16", 600, "fused:32")
    assert p["tuned_at"] == [[4096, 600], [65536, 600]] and set(p["slowdown"]) == {"fused:32", "fused:64"}


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_tune_candidates_name_their_plans(direction):
    """Each candidate but a rule of its own is a label the planner turns back into its launch."""
    for (m, n), dtype in [
        ((65536, 600), "bfloat16"),
        ((16384, 4096), "float32"),
        ((1024, 131072), "bfloat16"),
    ]:
        cands = tune.candidates(m, n, dtype, H200, direction)
        plans = softmax_plans if direction == "forward" else backward_plans
        cfg = picks.for_card(plans.AUTO, H200)
        assert len(cands) >= 2
        for c in cands:
            if c.name != "rule":
                assert (
                    plans.plan_pick(c.name, n, dtype, variants.full_vec(dtype), H200, cfg, True).launch(m)
                    == c.launch
                )
