"""labtools.inductor's experiment documents, from the committed dumps (no compile): the
report regenerated from recorded runs (REPORT.md, the saved kernel, KERNEL_ANNOTATION.md,
manifest.json), and experiment.run replacing only its own device's run.
"""

from __future__ import annotations

import json
import shutil

import pytest

torch = pytest.importorskip("torch")

from inductor_helpers import CPU_SAMPLE, DATA  # noqa: E402
from labtools.inductor import experiment, report  # noqa: E402
from labtools.inductor.capture import Dump  # noqa: E402


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
