"""benchmarks/minigpt_tokens_per_second.py runs (a CPU smoke test; the figures come from GPUs)
and writes the JSON it promises: environment, both heads, same tokens from both."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "minigpt_tokens_per_second.py"


def test_cpu_smoke_run_writes_the_report(tmp_path):
    out = tmp_path / "tps.json"
    cmd = [sys.executable, str(SCRIPT), "--device", "cpu", "--batch-sizes", "1", "--prompts", "1",
           "--repeats", "1", "--warmup", "1", "--max-new-tokens", "3", "--out", str(out)]  # fmt: skip
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(out.read_text())
    for key in ("date", "command", "torch", "triton", "numpy", "python", "device", "settings"):
        assert key in report, key
    assert report["device"] == "cpu" and report["triton_interpreter"] is True
    assert [(r["loop"], r["batch"]) for r in report["results"]] == [("generate", 1), ("device", 1)]
    for row in report["results"]:
        assert row["same_tokens_both_heads"] is True
        for head in ("triton", "torch"):
            assert row[head]["tokens"] > 0 and row[head]["median_tokens_per_s"] > 0
        assert row["triton_over_torch"] == pytest.approx(
            row["triton"]["median_tokens_per_s"] / row["torch"]["median_tokens_per_s"]
        )
    (alone,) = report["head_alone"]
    (in_decode,) = report["head_in_decode"]
    assert alone["batch"] == in_decode["batch"] == 1 and in_decode["steps"] == 3
    for head in ("triton", "torch"):
        assert alone[head]["median_us_per_call"] > 0
        assert all(in_decode[head][f"median_{part}_us"] > 0 for part in ("rest", "head", "wait"))
    assert in_decode["paired_head_triton_over_torch"] > 0 and in_decode["paired_step_triton_over_torch"] > 0


def test_bad_arguments_exit_2():
    run = subprocess.run([sys.executable, str(SCRIPT), "--repeats", "0", "--device", "cpu"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 2 and "--repeats" in run.stderr
