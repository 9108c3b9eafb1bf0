"""`minigpt-torch`: same answers as `minigpt-np`, and the labtools checks."""

import json
import subprocess
import sys
import time

import pytest
import torch
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


TINY = ["--steps", "2", "--batch-size", "2", "--block-size", "8", "--n-train-sentences", "100",
        "--n-val-sentences", "10", "--eval-every", "1"]  # fmt: skip


def exit_code(argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


@pytest.mark.skipif(torch.cuda.is_available(), reason="tests the message on a machine without a GPU")
@pytest.mark.parametrize("command", [["topk", "Yesterday I"], ["generate", "Yesterday I"], ["evaluate"],
                                     ["train", "--out", "m.npz"]])  # fmt: skip
def test_cuda_without_a_gpu_is_one_line(command, capsys):
    assert exit_code([*command, "--device", "cuda"]) == 2
    assert "argument --device: 'cuda' asked for, but this machine has no CUDA device" in one_error_line(
        capsys
    )


@pytest.mark.parametrize("device", ["tpu", "cuda:x", "meta", "cuda:99"])
def test_bad_device_is_one_line(device, capsys):
    assert exit_code(["topk", "Yesterday I", "--device", device]) == 2
    assert "argument --device" in one_error_line(capsys)


@pytest.mark.parametrize("argv, named", [
    (["train", "--out", "X", "--lr", "nan"], "argument --lr: must be a finite number > 0"),
    (["train", "--out", "X", "--eval-every", "0"], "argument --eval-every"),
    (["generate", "Yesterday I", "--sample", "--temperature", "0"], "argument --temperature"),
    (["topk", "Yesterday I", "-k", "0"], "argument -k"),
    (["topk", "Yesterday I", "--lm-head-softmax", "numpy"], "argument --lm-head-softmax"),
    (["train", "--out", "/no/such/folder/m.npz", "--steps", "1000000000"], "argument --out"),
])  # fmt: skip
def test_bad_arguments_are_one_line(argv, named, capsys):
    assert exit_code(argv) == 2
    assert named in one_error_line(capsys)


def test_triton_head_on_cpu_needs_the_interpreter(monkeypatch, capsys):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert exit_code(["topk", "Yesterday I", "--lm-head-softmax", "triton"]) == 2
    assert "TRITON_INTERPRET=1" in one_error_line(capsys)


def test_lm_head_softmax_choices_agree(capsys):
    """Both heads give the same top-k: on CUDA when there is a GPU, else on the CPU under
    Triton's interpreter (which conftest turns on there)."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tops = {}
    for impl in ("triton", "torch"):
        assert (
            main(["topk", "Yesterday I", "-k", "5", "--json", "--lm-head-softmax", impl, "--device", device])
            == 0
        )
        tops[impl] = json.loads(capsys.readouterr().out)
    assert [t["token"] for t in tops["triton"]] == [t["token"] for t in tops["torch"]]
    for a, b in zip(tops["triton"], tops["torch"]):
        assert a["prob"] == pytest.approx(b["prob"], rel=1e-5)


def test_evaluate_matches_numpy(tmp_path, capsys):
    out = tmp_path / "m.npz"
    assert np_main(["train", "--out", str(out), *TINY]) == 0
    capsys.readouterr()
    assert np_main(["evaluate", "--checkpoint", str(out)]) == 0
    np_report = json.loads(capsys.readouterr().out)
    assert main(["evaluate", "--checkpoint", str(out)]) == 0
    torch_report = json.loads(capsys.readouterr().out)
    assert torch_report.pop("device") == "cpu" and torch_report.pop("lm_head_softmax") == "torch"
    assert set(torch_report) == set(np_report)
    assert torch_report["val_loss"] == pytest.approx(np_report["val_loss"], rel=1e-5)
    assert torch_report["grammar_entropy"] == np_report["grammar_entropy"]
    assert torch_report["top5"]["Tomorrow I"][0][0] == np_report["top5"]["Tomorrow I"][0][0]


def test_model_runs_on_cpu_without_kernels_triton():
    """A process where kernels_triton cannot be imported: the model loads, runs, and the
    CUDA-side lookup falls back to torch's softmax with one warning."""
    code = """
import sys, warnings
sys.modules["kernels_triton"] = None  # import kernels_triton -> ImportError
import torch, minigpt_torch
from minigpt_torch import model as m
probs = minigpt_torch.load_pretrained()(minigpt_torch.example_inputs())
assert torch.allclose(probs.sum(-1), torch.ones(()), atol=1e-5)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    assert m.triton_module() is None and m.triton_module() is None
assert len(caught) == 1 and "kernels_triton is not importable" in str(caught[0].message), caught
try:
    m.lm_head_softmax(torch.zeros(2, 3), "triton")
    raise AssertionError("the triton head ran without kernels_triton")
except ImportError:
    pass
print("ok")
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


def test_train_refuses_an_unwritable_out_before_training(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    assert exit_code(["train", "--out", str(tmp_path / "file" / "m.npz"), "--steps", "1000000000"]) == 2
    assert "argument --out" in one_error_line(capsys)


def test_every_option_has_help():
    import argparse

    from minigpt_torch.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(sub) == {"train", "generate", "topk", "evaluate"}
    for name, p in [("minigpt-torch", parser), *sub.items()]:
        for action in p._actions:
            if not isinstance(action, argparse._SubParsersAction):
                assert action.help, (name, action.option_strings or action.dest)


@pytest.mark.parametrize(
    "argv", [["--help"], ["train", "--help"], ["topk", "--help"], ["train", "--out", "m.npz", "--lr", "nan"]]
)
def test_help_and_bad_flags_answer_without_importing_torch(argv, tmp_path):
    """`minigpt-torch --help` (and a refused flag) never imports torch: it answers at once."""
    code = (
        "import sys\n"
        "from minigpt_torch.cli import main\n"
        "try:\n"
        "    code = main(sys.argv[1:])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "sys.exit(code)\n"
    )
    t0 = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert "torch was imported" not in run.stderr, run.stderr[-2000:]
    assert run.returncode == (2 if "nan" in argv else 0), run.stderr[-2000:]
    assert time.perf_counter() - t0 < 20  # torch alone takes 6-13 s to import on a loaded CI machine
