"""labtools.inductor: dump, parse and annotate Inductor's kernels; the lab inductor CLI.

torch.compile on 2 cores takes seconds per compile (the first in a process, tens of
seconds), so the live tests share one TinyHead dump (module fixture) and compile only
twice more (the CLI end to end, and a profile of a one-line function). The parser is
tested on committed dumps in tests/labtools/data/inductor/ (see its README).

The parser, annotation, report and CLI of labtools.inductor share the committed fixtures of
experiment 25, read once at the top.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import sys
import types
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from labtools.cli import main  # noqa: E402
from labtools.inductor import experiment, report  # noqa: E402
from labtools.inductor.annotation import SOFTMAX_OPS, annotate, is_softmax  # noqa: E402
from labtools.inductor.capture import Dump, dump, read_dump_dir  # noqa: E402
from labtools.inductor.kernels import classify, simplify_cpp, split_top  # noqa: E402
from labtools.inductor.parse import parse_module, split_fused_name  # noqa: E402
from labtools.inductor.targets import TinyHead, resolve  # noqa: E402
from labtools.ops import softmax_ref, tolerance  # noqa: E402

DATA = Path(__file__).parent / "data" / "inductor"
# The TinyHead dumps of experiment 25 are the parser's samples too: one copy, in the experiment.
EXPERIMENT = Path(__file__).parents[2] / "experiments" / "25-compile"
CPU_SAMPLE = EXPERIMENT / "cpu" / "tinyhead"
CUDA_SAMPLE = EXPERIMENT / "cuda" / "tinyhead"


def _only_softmax(graphs):
    found = [(k, g) for g in graphs for k in g.kernels if is_softmax(k)]
    assert len(found) == 1, [k.name for g in graphs for k in g.kernels]
    return found[0]


def _cited_lines_match_source(kernel, text: str) -> None:
    """Every `line N: `code`` the annotation quotes is that line of the kernel's source."""
    src = kernel.source.splitlines()
    cited = re.findall(r"line (\d+): `([^`]+)`", text)
    assert cited
    for n, code in cited:
        assert src[int(n) - 1].strip() == code, (n, code)


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


# --- the committed CPU dump ---------------------------------------------------------


def test_cpu_sample_parse():
    (graph,) = read_dump_dir(CPU_SAMPLE)
    (k,) = graph.kernels
    assert (k.name, k.language, k.kind) == ("cpp_fused_amax_exp_sub_sum_1_div_0", "cpp", "cpp")
    assert k.fused_nodes == ["amax", "sub", "exp", "sum_1", "div"]
    assert k.fused_ops == ["amax", "sub", "exp", "sum", "div"]
    assert k.node_targets["sum_1"] == "aten.sum.dim_IntList"
    b = k.body
    assert [(p.name, p.role, p.buffer) for p in b.params] == [
        ("in_ptr0", "input", "buf0"),
        ("out_ptr0", "output", "buf1"),
        ("out_ptr1", "output", "buf3"),
        ("out_ptr2", "output", "buf4"),
    ]
    assert {(a.ptr, a.index, a.lanes) for a in b.loads} >= {
        ("in_ptr0", "x1 + 600*x0", 8),
        ("out_ptr0", "x0", None),
    }
    stores = {(a.ptr, a.index): b.origin_op(a.var, a.line) for a in b.stores}
    assert stores == {
        ("out_ptr0", "x0"): ("max", True),
        ("local_buffer_data_0", "x1"): ("exp", False),
        ("out_ptr1", "x0"): ("sum", True),
        ("out_ptr2", "x1 + 600*x0"): ("div", False),
    }
    assert [r.op for r in b.reductions] == ["max", "sum"]
    assert [(lb.name, lb.size) for lb in b.local_buffers] == [("local_buffer_data_0", "600")]
    assert [(lp.var, lp.end, lp.step, lp.parallel) for lp in b.loops][:2] == [
        ("x0", "2", "1", True),
        ("x1", "600", "8", False),
    ]
    assert graph.returns == ["buf4"]
    assert [a.name for a in graph.materialized()] == ["buf0", "buf1", "buf3"]
    assert graph.calls[0].source_nodes == ["linear"] and graph.calls[0].out == "buf0"


def test_cpu_sample_annotation_walks_through_the_five_questions():
    (graph,) = read_dump_dir(CPU_SAMPLE)
    k = graph.kernels[0]
    text = annotate(k, graph)
    for heading in (
        "1. Which ATen ops were fused",
        "2. Where the input is read",
        "3. Where the output is written",
        "4. The reductions",
        "5. What is not there",
    ):
        assert heading in text
    assert "Never written anywhere: `sub`" in text
    assert "`exp` is written only to `local_buffer_data_0`" in text
    assert "no tensor for exp(x − max)" in text
    assert "`buf1` via `out_ptr0` (f32[2, 1], 8 bytes" in text  # the row max does reach memory
    _cited_lines_match_source(k, text)


# --- Triton: the format, generated here; the H100's own output once committed -------


def test_triton_persistent_reduction_sample():
    (graph,) = read_dump_dir(DATA / "triton_codegen_tinyhead")
    k, _ = _only_softmax([graph])
    assert (k.language, k.kind) == ("triton", "persistent_reduction")
    assert k.source_nodes == ["softmax"] and k.original_aten == ["aten._softmax"]
    assert [(p.name, p.role) for p in k.body.params if p.role != "block"][0] == ("in_out_ptr0", "in_out")
    assert graph.storage(k.body.params[0].buffer) == "buf0"  # softmax overwrites the addmm output in place
    (load,) = k.body.loads
    assert (load.index, load.mask) == ("r0_1 + 600*x0", "r0_mask & xmask")
    (store,) = k.body.stores
    assert k.body.origin_op(store.var, store.line) == ("div", False)
    assert [(r.op, r.looped) for r in k.body.reductions] == [("max", False), ("sum", False)]
    text = annotate(k, graph)
    assert "Never written anywhere: `amax`, `sub`, `exp`, `sum_1`" in text
    assert "no buffer for exp(x − max)" in text
    _cited_lines_match_source(k, text)


def test_triton_looped_reduction_sample_stores_exp():
    (graph,) = read_dump_dir(DATA / "triton_codegen_widehead")
    k, _ = _only_softmax([graph])
    assert k.kind == "reduction" and len(k.body.loops) == 3
    assert [(r.op, r.looped, r.accumulator) for r in k.body.reductions] == [
        ("max", True, "_tmp2"),
        ("sum", True, "_tmp8"),
    ]
    stored = [k.body.origin_op(a.var, a.line)[0] for a in k.body.stores]
    assert stored == ["exp", "div"]  # a 50000-wide row does not fit one block: exp goes to memory and back
    text = annotate(k, graph)
    assert "exp(x − max) **is** written to memory" in text


@pytest.mark.skipif(
    not CUDA_SAMPLE.is_dir(),
    reason=f"no CUDA dump in {CUDA_SAMPLE}: `lab inductor experiment --out experiments/25-compile --device cuda` "
    "on a GPU machine records it",
)
def test_cuda_sample_from_the_h100():
    graphs = read_dump_dir(CUDA_SAMPLE)
    k, graph = _only_softmax(graphs)
    assert k.language == "triton" and "device_str='cuda'" in graph.source
    assert k.kind in ("persistent_reduction", "reduction")
    assert any("600" in a.index for a in k.body.loads) and k.body.stores
    assert {r.op for r in k.body.reductions} >= {"max", "sum"} or "online_softmax" in {
        r.op for r in k.body.reductions
    }
    text = annotate(k, graph)
    _names_every_softmax_op(k, text)
    if k.kind == "persistent_reduction":
        assert "no buffer for exp(x − max)" in text
    _cited_lines_match_source(k, text)


def _names_every_softmax_op(kernel, text):
    """The annotation names each fused op by its ATen (or prims) target. On CUDA, torch 2.11
    fuses the max and the sum as one prims.prepare_softmax_online node."""
    online = "prepare_softmax_online" in kernel.fused_ops
    for op in ["sub", "exp", "div", *(["prepare_softmax_online"] if online else ["amax", "sum"])]:
        assert re.search(rf"`(aten|prims)\.{op}\b", text), op


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


# --- the parser's pieces ------------------------------------------------------------


@pytest.mark.parametrize(
    "rhs, op",
    [
        ("tl.load(in_ptr0 + (r0_1 + 600*x0), r0_mask & xmask, other=0.0)", ("load", False)),
        ("triton_helpers.max2(tmp3, 1)[:, None].to(tl.float32)", ("max", True)),
        ("tl.sum(tmp9, 1)[:, None]", ("sum", True)),
        ("(tmp6 / tmp10)", ("div", False)),
        ("tmp0 - tmp4", ("sub", False)),
        ("libdevice.exp(tmp5)", ("exp", False)),
        ("tmp3.exp();", ("exp", False)),
        ("decltype(tmp9)::blendv(tmp7, tmp9, inductor_vec_mask_cast<float,1>(tmp3));", ("where", False)),
        ("at::vec::VecMask<float,1>(tmp0 == tmp2);", ("eq", False)),
        ("static_cast<float>(0.25);", ("constant", False)),
        ("triton_helpers.maximum(tmp1, tmp0)", ("maximum", False)),
        ("at::vec::Vectorized<float>(tmp1);", ("broadcast", False)),
    ],
)
def test_classify(rhs, op):
    assert classify(rhs) == op


def test_text_helpers():
    assert split_top("f(a, b), c, [d, e]") == ["f(a, b)", "c", "[d, e]"]
    assert simplify_cpp("in_ptr0 + static_cast<int64_t>(x1 + 600L*x0)") == "in_ptr0 + (x1 + 600*x0)"
    assert simplify_cpp("at::vec::Vectorized<float>(tmp1)") == "at::vec::Vectorized<float>(tmp1)"
    vocab = {"amax", "exp", "sub", "sum_1", "div", "full_default", "view_7"}
    assert split_fused_name("amax_full_default_view_7_exp_sub_sum_1_div", vocab) == [
        "amax",
        "full_default",
        "view_7",
        "exp",
        "sub",
        "sum_1",
        "div",
    ]
    assert split_fused_name("amax_bogus", vocab) is None


def test_parse_module_without_kernels_is_empty_not_an_error():
    g = parse_module("")
    assert (g.kernels, g.calls, g.allocations, g.returns) == ([], [], {}, [])


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


# --- CLI, profile, experiment documents ---------------------------------------------


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


def _record(device: str, torch_threads: int, eager_us: float, compiled_us: float) -> dict:
    """A synthetic results.json: made-up numbers to check the report renders what it is given."""
    stat = lambda us: {"median_us": us, "q1_us": us, "q3_us": us, "reps": 10}  # noqa: E731
    prof = [
        {
            "target": "tinyhead",
            "device": device,
            "shapes": [[2, 64]],
            "mode": mode,
            "compile_s": c,
            "max_abs_error": 0.0,
            "eager": stat(eager_us),
            "compiled": stat(us),
            "eager_host": None,
            "compiled_host": None,
            "speedup": eager_us / us,
        }
        for mode, c, us in (("default", 4.25, compiled_us), ("max-autotune", 17.5, compiled_us / 2))
    ]
    return {
        "device": device,
        "date": "2026-01-01T00:00:00+00:00",
        "command": f"lab inductor experiment --device {device}",
        "versions": {"torch": "9.9", "triton": "9.9"},
        "modes": ["default", "max-autotune"],
        "machine": {
            "platform": "test",
            "processor": "x",
            "cpus": 2,
            "torch_threads": torch_threads,
            "load_average": 0.5,
            "env": {},
        },
        "tinyhead": {
            "shape": [2, 64],
            "max_abs_error": 3.25e-10,
            "max_abs_error_vs_float64": 1.5e-9,
            "softmax_kernel": None,
            "kernels": [],
            "export_error": "not exported in this test",
        },
        "minigpt": {"available": False, "error": "no minigpt in this test"},
        "profile": prof,
    }


def test_report_regenerates_from_recorded_runs_and_a_cuda_run_leaves_the_cpu_half(tmp_path):
    out = tmp_path / "25-compile"
    shutil.copytree(CPU_SAMPLE, out / "cpu" / "tinyhead")
    (out / "cpu" / "results.json").write_text(json.dumps(_record("cpu", 2, 123.0, 246.0)))
    (out / "DISTRIBUTED.md").write_text("hand-written\n")
    report.write(out)
    text = (out / "REPORT.md").read_text()
    assert "3.25e-10" in text and "123" in text and "246" in text and "2.00x slower" in text
    assert "max-autotune compiles in 17.5 s against 4.2 s" in text
    assert "cuda | not recorded yet" in text
    cpp = "cpu/tinyhead/kernels/cpp_fused_amax_exp_sub_sum_1_div_0.cpp"
    assert f"[{cpp}]({cpp})" in text and (out / cpp).is_file()
    # the saved kernel, by the name the lab asks for: the dump's source, and no CUDA one yet
    assert "[kernel.cpp](kernel.cpp)" in text
    assert (out / "kernel.cpp").read_text() == (out / cpp).read_text() and not (out / "kernel.py").exists()

    shutil.copytree(DATA / "triton_codegen_tinyhead", out / "cuda" / "tinyhead")  # stands in for an H100 dump
    (out / "cuda" / "results.json").write_text(json.dumps(_record("cuda", 16, 50.0, 25.0)))
    report.write(out)
    text = (out / "REPORT.md").read_text()
    assert "123" in text and "2.00x faster" in text and "not recorded yet" not in text
    triton = "cuda/tinyhead/kernels/triton_per_fused_amax_exp_sub_sum_1_div_0.py"
    assert f"({triton})" in text and "[kernel.py](kernel.py)" in text
    assert (out / "kernel.py").read_text() == (out / triton).read_text()
    annotation = (out / "KERNEL_ANNOTATION.md").read_text()
    assert "cpp_fused_amax_exp_sub_sum_1_div_0" in annotation and "triton_per_fused" in annotation
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["files"]["DISTRIBUTED.md"]["made_by"] == "hand-written"
    assert manifest["files"]["kernel.py"]["made_by"] == "lab inductor report"
    assert manifest["files"]["cpu/tinyhead/output_code_0.py"]["made_by"] == "cpu run"
    assert set(manifest["runs"]) == {"cpu", "cuda"}
    assert (out / "DISTRIBUTED.md").read_text() == "hand-written\n"


def test_experiment_run_replaces_only_its_own_device(tmp_path, monkeypatch):
    """run() with dump and profile stubbed by the committed CPU dump: what it writes, and where."""
    out = tmp_path / "25-compile"
    shutil.copytree(DATA / "triton_codegen_tinyhead", out / "cuda" / "tinyhead")
    sample = CPU_SAMPLE

    def recorded_dump(model, x):
        y = model(x)
        return Dump(
            "cpu",
            "default",
            [(sample / "output_code_0.py").read_text()],
            [(sample / "post_grad_0.txt").read_text()],
            eager=y,
            compiled_output=y,
        )

    def no_minigpt(device):
        raise ValueError("no minigpt in this test")

    monkeypatch.setattr(experiment, "dump", recorded_dump)
    monkeypatch.setattr(experiment, "minigpt", no_minigpt)

    def failing_profile(*args, **kwargs):
        raise RuntimeError("no timing in this test")

    monkeypatch.setattr(experiment, "profile", failing_profile)
    monkeypatch.setattr(experiment, "export_graph", lambda fn, inputs, path: "stubbed")
    results = experiment.run(out, "cpu", "test")
    assert results["tinyhead"]["softmax_kernel"] == "cpp_fused_amax_exp_sub_sum_1_div_0"
    assert results["tinyhead"]["max_abs_error_vs_float64"] < 1e-6
    assert (out / "cpu" / "tinyhead" / "kernels" / "cpp_fused_amax_exp_sub_sum_1_div_0.cpp").exists()
    assert (out / "cuda" / "tinyhead" / "output_code_0.py").exists()  # the other device's run is untouched
    assert results["profile"] == [] and len(results["profile_errors"]) == 2  # both batches, recorded
    assert json.loads((out / "cpu" / "results.json").read_text())["minigpt"]["error"].endswith(
        "no minigpt in this test"
    )


def test_is_softmax_accepts_inductors_online_softmax_node():
    from types import SimpleNamespace

    two_reductions = SimpleNamespace(fused_ops=["amax", "sub", "exp", "sum", "div"])
    online = SimpleNamespace(fused_ops=["prepare_softmax_online", "sub", "exp", "div", "getitem"])
    no_div = SimpleNamespace(fused_ops=["prepare_softmax_online", "sub", "exp"])
    assert is_softmax(two_reductions) and is_softmax(online) and not is_softmax(no_div)


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
