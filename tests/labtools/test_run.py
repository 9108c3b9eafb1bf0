"""`lab run` end to end on this (CPU) machine, with fake registered implementations and checks."""

import io
import json

import pytest
from labtools import job, manifest, run_report
from labtools.cli import main
from labtools.registry import Check
from labtools.sweep import Sweep


def test_lab_run_on_cpu_writes_every_artifact(fake_registry, tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(["run", "--out", str(out), "--quick", "--device", "cpu", "--time-cap", "0.05"])
    # fake.identity, fake.tail_bug and fake.crash fail, by design: the exit status says so
    assert rc == 1
    names = {p.name for p in out.iterdir()}
    assert {
        "manifest.json",
        "REPORT.md",
        "sweep_softmax.json",
        "sweep_softmax_backward.json",
        "b512_softmax.json",
        "roofline.png",
        "frac_of_copy.png",
        "roofline_softmax_backward.png",
        "frac_of_copy_softmax_backward.png",
        "roofline_512x600.png",  # one roofline per swept shape
        "roofline_64x4096.png",
        "roofline_softmax_backward_512x600.png",
    } <= names
    assert not [n for n in names if n.endswith(".tmp")]  # every file written atomically

    m = json.loads((out / "manifest.json").read_text())
    assert manifest.validate(m) == []
    assert m["device"] == "cpu" and m["gpu"]["model"] is None and m["seed"] == 42
    assert m["command"] == f"lab run --out {out} --quick --device cpu --time-cap 0.05"
    assert m["ceilings"]["copy_gbps"] > 0 and m["ceilings"]["matmul_tflops"]["fp32"] > 0
    kernels = m["softmax_kernels"]
    assert set(kernels) == {"fake.ref", "fake.tuned", "fake.short_rows"}  # the broken ones are not timed
    assert kernels["fake.ref"]["frac_of_F_softmax"] == 1.0 and kernels["fake.tuned"]["us_at_B512"] > 0
    assert (
        kernels["fake.ref"]["call_frac_of_F_softmax"] == 1.0 and kernels["fake.tuned"]["call_us_at_B512"] > 0
    )
    # B512 is the sweep's own point (512x600 float32 is a CPU sweep shape): the same figures
    swept = {r.impl: r for r in Sweep.load(out / "sweep_softmax.json").at((512, 600), "float32")}
    for name, k in kernels.items():
        assert k["us_at_B512"] == swept[name].median_us and k["call_us_at_B512"] == swept[name].call_us
        assert k["unstable"] == swept[name].unstable and k["threads"] == swept[name].threads
    assert kernels["fake.tuned"]["autotune_picked"] == {"BLOCK": 1024, "num_warps": 4, "num_stages": 1}
    assert len(kernels["fake.tuned"]["autotune_picks"]) == 2
    assert m["torch_port"] == {
        "byte_equivalence_at_fp32_cpu": "passed",
        "max_abs_diff_to_numpy_reference": pytest.approx(3e-7),
        "fp64_max_abs_diff": 1e-15,
        "kernel_swap_changes_top1_token": None,
    }
    assert m["checks"]["minigpt_torch.port"]["status"] == "passed"
    assert m["checks"]["minigpt_torch.kernel_swap"]["status"] == "skipped"
    notes = " ".join(m["notes"])
    assert (
        "no CUDA device" in notes
        and "fake.gpu_only" in notes
        and "minigpt_torch.kernel_swap skipped" in notes
    )
    assert m["sweeps"]["softmax"] == "sweep_softmax.json"
    # no seed kernel (naive, smem, fused, Triton) among the fakes: no seed figure, and a note says so
    assert m["roofline"] is None and "seed roofline" in notes

    s = Sweep.load(out / "sweep_softmax.json")
    assert s.device == "cpu" and {tuple(r.shape) for r in s.records} == {(512, 600), (64, 4096)}
    assert {f["impl"] for f in s.failed} == {"fake.identity", "fake.tail_bug", "fake.crash"}
    assert Sweep.load(out / "sweep_softmax_backward.json").records[0].impl == "fake.bwd_ref"

    report = (out / "REPORT.md").read_text()
    for text in (
        "## Not run here",
        "no CUDA device",
        "minigpt_torch.port | passed",
        "## Headline",
        "- B512",
        "## softmax at B512",
        "| implementation | label | device us | call us | device vs F.softmax | call vs F.softmax",
        "| fake.tuned | tuned |",
        "{'BLOCK': 1024",
        "## softmax sweep (cpu)",
        "fake.crash: RuntimeError",
        "fake.short_rows: supports() rejects this shape -- 64x4096 float32",
        "- [roofline.png](roofline.png)",
    ):
        assert text in report, text
    assert "implementation run(s) failed" in capsys.readouterr().err
    # the headline names no unstable figure (this shared machine may make any figure unstable)
    head = report.split("## Headline")[1].split("\n## ")[0]
    for r in Sweep.load(out / "b512_softmax.json").records:
        if r.unstable:
            assert f"fastest {r.label} ({r.impl})" not in head


def test_lab_run_exits_zero_when_everything_passes(fake_registry, tmp_path, monkeypatch):
    broken = ("fake.identity", "fake.tail_bug", "fake.crash")
    working = {k: v for k, v in fake_registry._REGISTRY.items() if k not in broken}
    monkeypatch.setattr(fake_registry, "_REGISTRY", working)
    monkeypatch.setattr(
        job.ceilings_mod,
        "measure",
        lambda device, matmul: job.ceilings_mod.Ceilings("cpu: fake", 10.0, {"fp32": 0.01}, None),
    )
    cfg = job.RunConfig(out=tmp_path, device="cpu", quick=True, time_cap_s=0.02, command="lab run (test)")
    assert job.run(cfg, log=io.StringIO()) == 0
    m = json.loads((tmp_path / "manifest.json").read_text())
    assert m["ceilings"]["device"] == "cpu: fake" and m["command"] == "lab run (test)"


def test_headline_skips_unstable_figures(synthetic_sweep):
    s = synthetic_sweep(shapes=((512, 600),), dtypes=("float32",))
    fastest = min((r for r in s.records if r.ref != r.impl), key=lambda r: r.median_us)
    lines = run_report.headline(s.records, {"softmax": s})
    assert fastest.label in lines[0] and "x F.softmax" in lines[0]
    fastest.unstable, fastest.unstable_why = True, "device time IQR 30% of the median > 10%"
    lines = run_report.headline(s.records, {"softmax": s})
    assert fastest.label not in lines[0]
    assert "1 of 7 figures unstable" in lines[-1]
    s.records[0].unstable, s.records[0].unstable_why = True, "call time IQR 50% of the median > 10%"
    assert "no ratio headlined" in run_report.headline(s.records, {})[0]


def test_run_checks_records_failures_errors_and_skips():
    checks = [
        Check("ok", lambda: {"passed": True, "max_abs_diff": 0.0}),
        Check("bad", lambda: {"passed": False, "why": "top-1 changed"}),
        Check("crash", lambda: 1 / 0),
        Check("no_passed_key", lambda: {"max_abs_diff": 1.0}),
        Check("gpu", lambda: {"passed": True}, needs_cuda=True),
    ]
    out = job.run_checks(checks, has_cuda=False, log=io.StringIO())
    assert {k: v["status"] for k, v in out.items()} == {
        "ok": "passed",
        "bad": "failed",
        "crash": "error",
        "no_passed_key": "error",
        "gpu": "skipped",
    }
    assert out["crash"]["reason"] == "ZeroDivisionError: division by zero"
    assert out["bad"]["result"]["why"] == "top-1 changed"
    assert "needs a CUDA device" in out["gpu"]["reason"]
    for entry in out.values():  # each is valid for the manifest's checks block
        assert manifest.validate(entry, manifest.SCHEMA["properties"]["checks"]["additionalProperties"]) == []


def test_experiment_dir_is_found_from_anywhere_in_the_repository(tmp_path):
    (tmp_path / "packages").mkdir()
    (tmp_path / "experiments" / "24-triton-and-pytorch").mkdir(parents=True)
    deep = tmp_path / "packages" / "labtools"
    deep.mkdir()
    assert job.experiment_dir("24", deep) == tmp_path / "experiments" / "24-triton-and-pytorch"
