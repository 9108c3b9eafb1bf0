"""`minigpt-torch`: same answers as `minigpt-np`, and the labtools checks."""

import json

import pytest
from labtools import registry
from minigpt_np.cli import main as np_main
from minigpt_np.lexicon import PAST_SIMPLE
from minigpt_torch import checks
from minigpt_torch.cli import main


def test_topk_json_matches_numpy(capsys):
    assert main(["topk", "Yesterday I", "-k", "5", "--json"]) == 0
    torch_top = json.loads(capsys.readouterr().out)
    assert np_main(["topk", "Yesterday I", "-k", "5", "--json"]) == 0
    np_top = json.loads(capsys.readouterr().out)
    assert [t["token"] for t in torch_top] == [t["token"] for t in np_top]
    assert all(t["token"] in PAST_SIMPLE for t in torch_top)
    for a, b in zip(torch_top, np_top):
        assert a["prob"] == pytest.approx(b["prob"], abs=1e-6)


def test_generate_matches_numpy(capsys):
    for args in (
        ["generate", "Tomorrow I"],
        ["generate", "Every day they", "--sample", "--seed", "5", "-n", "3"],
    ):
        assert main(args) == 0
        torch_out = capsys.readouterr().out
        assert np_main(args) == 0
        assert torch_out == capsys.readouterr().out


def test_unknown_word_and_bad_device_are_clear_errors(capsys):
    assert main(["topk", "Yesterday Iz"]) == 2
    assert "unknown word(s) ['Iz']" in capsys.readouterr().err


def test_single_process_train_writes_a_loadable_checkpoint(tmp_path, capsys):
    out = tmp_path / "t.npz"
    assert main(["train", "--out", str(out), "--steps", "4", "--batch-size", "4", "--block-size", "8",
                 "--n-train-sentences", "200", "--n-val-sentences", "20", "--eval-every", "2"]) == 0  # fmt: skip
    meta = json.loads(capsys.readouterr().out)
    assert meta["world_size"] == 1 and meta["command"].startswith("minigpt-torch train --out")
    assert main(["topk", "Yesterday I", "--checkpoint", str(out), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 5


def test_labtools_checks_are_registered_and_the_port_check_passes():
    checks.register()
    registered = {c.name: c for c in registry.checks(load=False)}
    assert registered["minigpt_torch.kernel_swap"].needs_cuda
    port = registered["minigpt_torch.port"]
    assert not port.needs_cuda
    result = port.fn()
    assert result["passed"] is True and result["byte_equivalence_at_fp32_cpu"] == "passed"
    assert 0 < result["max_abs_diff_to_numpy_reference"] <= 1e-4
    assert result["fp64_max_abs_diff"] <= 1e-12
    json.dumps(result)


def test_entry_point_is_declared():
    from importlib.metadata import entry_points

    eps = {ep.name: ep.value for ep in entry_points(group=registry.ENTRY_POINT_GROUP)}
    assert eps.get("minigpt_torch") == "minigpt_torch.checks:register"
