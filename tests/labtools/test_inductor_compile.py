"""labtools.inductor live: torch.compile of TinyHead, the targets, and the lab inductor CLI.

torch.compile on 2 cores takes seconds per compile (the first in a process, tens of
seconds), so the live tests share one TinyHead dump (module fixture) and compile only
twice more (the CLI end to end, and a profile of a one-line function); a GPU machine
adds one compile on CUDA. The progress lines the CLI prints during slow steps are
tested here too.
"""

from __future__ import annotations

import json
import random
import re
import sys
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from inductor_helpers import _cited_lines_match_source, _names_every_softmax_op, _only_softmax  # noqa: E402
from labtools.cli import main  # noqa: E402
from labtools.inductor.annotation import SOFTMAX_OPS, annotate  # noqa: E402
from labtools.inductor.capture import dump  # noqa: E402
from labtools.inductor.targets import TinyHead, resolve  # noqa: E402
from labtools.ops import softmax_ref, tolerance  # noqa: E402

# --- live: one TinyHead compile shared by the tests below --------------------------


@pytest.fixture(scope="module")
def tiny():
    seed = random.randrange(2**31)
    torch.manual_seed(seed)  # fresh weights and input every run
    model, x = TinyHead().eval(), torch.randn(2, 64)
    return seed, model, x, dump(model, x)


def test_tinyhead_compile_matches_eager_and_float64(tiny):
    seed, model, x, d = tiny
    assert d.device == "cpu" and len(d.modules) == 1
    assert d.max_abs_error < 1e-6, f"seed {seed}"
    w, b = model.fc.weight.detach().double().numpy(), model.fc.bias.detach().double().numpy()
    np.testing.assert_allclose(
        d.compiled_output.numpy(),
        softmax_ref(x.double().numpy() @ w.T + b),
        **tolerance("float32"),
        err_msg=f"seed {seed}",
    )


def test_tinyhead_dump_has_one_fused_softmax_and_its_annotation_names_each_op(tiny):
    kernel, graph = _only_softmax(tiny[3].graphs())
    assert set(SOFTMAX_OPS) <= set(kernel.fused_ops)
    text = annotate(kernel, graph)
    for op in ("amax", "sub", "exp", "sum", "div"):
        assert f"`aten.{op}." in text
    assert "exp(x − max)" in text
    _cited_lines_match_source(kernel, text)
    # the linear layer stays a library call that writes the kernel's input
    assert [c.callee for c in graph.calls] == ["extern_kernels.addmm", kernel.name]
    assert graph.allocation(kernel.body.params[0].buffer).shape == (2, 600)


def test_capture_leaves_torch_logging_as_it_was(tiny):
    import logging

    for name in logging.Logger.manager.loggerDict:
        if name.endswith("__output_code"):
            log = logging.getLogger(name)
            assert not any(type(h).__name__ == "_Collector" for h in log.handlers)


@pytest.mark.gpu
def test_tinyhead_on_cuda_compiles_to_one_triton_softmax():
    seed = random.randrange(2**31)
    torch.manual_seed(seed)
    model, x = TinyHead().cuda().eval(), torch.randn(2, 64, device="cuda")
    d = dump(model, x)
    assert d.device == "cuda" and d.max_abs_error < 1e-6, f"seed {seed}"
    kernel, graph = _only_softmax(d.graphs())
    assert kernel.language == "triton" and kernel.kind in ("persistent_reduction", "reduction")
    text = annotate(kernel, graph)
    _names_every_softmax_op(kernel, text)
    _cited_lines_match_source(kernel, text)


# --- targets ------------------------------------------------------------------------


def test_resolve_module_function_target(tmp_path, monkeypatch):
    (tmp_path / "my_target.py").write_text(
        "import torch\n"
        "def double(device):\n"
        "    return (lambda x: 2 * x), torch.ones(3, device=device)\n"
        "def no_device():\n"
        "    return None\n"
        "def elsewhere(device):\n"
        "    return (lambda x: x), (torch.ones(3, device='meta'),)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    fn, inputs = resolve("my_target:double", "cpu")
    assert isinstance(inputs, tuple) and torch.equal(fn(*inputs), torch.full((3,), 2.0))
    with pytest.raises(ValueError, match="taking `device`"):
        resolve("my_target:no_device", "cpu")
    with pytest.raises(ValueError, match="not on 'cpu'"):
        resolve("my_target:elsewhere", "cpu")
    with pytest.raises(ValueError, match="cannot import"):
        resolve("my_target:missing", "cpu")
    with pytest.raises(ValueError, match="unknown target"):
        resolve("nonsense", "cpu")
    with pytest.raises(ValueError, match="device must be"):
        resolve("tinyhead", "tpu")


def test_minigpt_target_explains_what_is_missing_and_uses_the_two_functions(monkeypatch):
    monkeypatch.setitem(sys.modules, "minigpt_torch", types.ModuleType("minigpt_torch"))
    sys.modules["minigpt_torch"].__file__ = "stub"
    with pytest.raises(ValueError, match="load_pretrained, example_inputs"):
        resolve("minigpt", "cpu")
    model = torch.nn.Linear(4, 2)
    sys.modules["minigpt_torch"].load_pretrained = lambda: model
    sys.modules["minigpt_torch"].example_inputs = lambda: torch.randn(3, 4)
    fn, inputs = resolve("minigpt", "cpu")
    assert fn is model and not fn.training and inputs[0].shape == (3, 4)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
def test_cuda_target_on_a_machine_without_cuda_is_a_clear_error(capsys):
    assert main(["inductor", "dump", "tinyhead", "--device", "cuda", "--out", "unused"]) == 2
    assert "torch.cuda.is_available() is False" in capsys.readouterr().err


# --- CLI, profile, progress ---------------------------------------------------------


def test_cli_dump_end_to_end(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["inductor", "dump", "tinyhead", "--device", "cpu"]) == 0
    (out,) = (tmp_path / "out").iterdir()  # a run folder of its own
    assert out.name.startswith("inductor-dump-")
    stdout, stderr = capsys.readouterr()
    assert "softmax" in stdout and f"written to out/{out.name}" in stdout
    # progress: when each slow step starts and ends, with its time (on stderr, terminal or not)
    assert "lab inductor: torch.compile tinyhead (mode default): started" in stderr
    assert re.search(r"lab inductor: torch.compile tinyhead \(mode default\): done in \d+\.\d s", stderr)
    record = json.loads((out / "run.json").read_text())
    assert (
        record["command"] == "inductor dump" and record["device"] == "cpu" and "parse.json" in record["files"]
    )
    assert "[parse.json](parse.json)" in (out / "REPORT.md").read_text()
    parsed = json.loads((out / "parse.json").read_text())
    assert parsed["max_abs_error"] < 1e-6 and parsed["versions"]["torch"] == torch.__version__
    (kernel,) = parsed["graphs"][0]["kernels"]
    assert set(SOFTMAX_OPS) <= set(kernel["fused_ops"])
    assert (out / "kernels" / f"{kernel['name']}.cpp").read_text().startswith("#include")
    assert (out / "output_code_0.py").exists() and (out / "post_grad_0.txt").exists()
    assert "exp(x − max)" in (out / "ANNOTATION.md").read_text()


def test_cli_profile_times_eager_and_compiled_through_the_harness(tmp_path, monkeypatch, capsys):
    (tmp_path / "scaled.py").write_text(
        "import torch\n"
        "def softmax2(device):\n"
        "    return (lambda t: torch.softmax(2 * t, dim=-1)), torch.randn(64, 128, device=device)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["inductor", "profile", "scaled:softmax2", "--modes", "default", "--json"]) == 0
    (rec,) = json.loads(capsys.readouterr().out)
    assert rec["mode"] == "default" and rec["device"] == "cpu" and rec["shapes"] == [[64, 128]]
    assert rec["max_abs_error"] < 1e-6 and rec["compile_s"] > 0
    assert rec["eager"]["median_us"] > 0 and rec["compiled"]["median_us"] > 0 and rec["eager"]["reps"] >= 3
    assert rec["speedup"] == pytest.approx(rec["eager"]["median_us"] / rec["compiled"]["median_us"])


def test_heartbeat_prints_while_a_step_runs_and_when_it_ends():
    import io
    import time

    from labtools.inductor.heartbeat import heartbeat

    log = io.StringIO()  # not a terminal: the lines must come anyway
    with heartbeat("a slow step", every_s=0.05, expected_s=10, stream=log):
        time.sleep(0.3)
    lines = log.getvalue().splitlines()
    assert lines[0] == "lab inductor: a slow step: started (usually about 10 s)"
    beats = [line for line in lines if "elapsed" in line]
    assert len(beats) >= 2 and "left" in beats[0]
    assert re.fullmatch(r"lab inductor: a slow step: done in 0\.\d s", lines[-1])
    log = io.StringIO()
    with pytest.raises(KeyError), heartbeat("a failing step", every_s=10, stream=log):
        raise KeyError("x")
    assert log.getvalue().splitlines()[-1].startswith("lab inductor: a failing step: failed after")
