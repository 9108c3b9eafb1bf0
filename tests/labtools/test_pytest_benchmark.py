"""pytest-benchmark end to end: a benchmark written with labtools.bench.bench, run with
--benchmark-only --benchmark-json, stores the harness's own samples as its rounds."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

BENCH_FILE = """
import json, os
import numpy as np
from labtools import bench
from labtools.bench import records
from labtools.registry import Implementation

IMPL = Implementation(lambda x: np.exp(x), "softmax", "t.exp", "numpy", "exp", device="cpu", dtypes=("float32",))
SEEN = []

def fake_time_fn(fn, arg_sets, device, **kw):
    t = bench.time_cpu(fn, arg_sets, **kw)
    SEEN.append(list(t.samples_us))
    return t

records.time_fn = fake_time_fn  # record what the harness measured, then let it go on as usual

def test_exp(benchmark):
    rec = bench.bench(benchmark, IMPL, (64, 256), "float32", min_reps=7, max_reps=12, time_cap_s=0.5)
    with open(os.environ["SAMPLES_OUT"], "w") as f:
        json.dump({"samples_us": SEEN[-1], "median_us": rec.median_us, "reps": rec.reps}, f)
"""


def test_benchmark_json_holds_the_harness_samples(tmp_path):
    pytest.importorskip("pytest_benchmark")
    (tmp_path / "bench_exp.py").write_text(textwrap.dedent(BENCH_FILE))
    out, samples = tmp_path / "bench.json", tmp_path / "samples.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "--benchmark-only",
            f"--benchmark-json={out}",
            str(tmp_path / "bench_exp.py"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        # a fresh session: not this one's options, nor its xdist worker's (pytest-benchmark turns
        # itself off under xdist)
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_ADDOPTS", "PYTEST_XDIST"))},
            "SAMPLES_OUT": str(samples),
        },
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    harness = json.loads(samples.read_text())
    (entry,) = json.loads(out.read_text())["benchmarks"]
    stats = entry["stats"]
    assert 7 <= harness["reps"] <= 12 and stats["rounds"] == harness["reps"] and stats["iterations"] == 1
    assert stats["data"] == pytest.approx([us * 1e-6 for us in harness["samples_us"]], rel=1e-12)
    assert stats["median"] == pytest.approx(harness["median_us"] * 1e-6)
    assert entry["extra_info"]["timer"] == "labtools (cpu)" and entry["extra_info"]["impl"] == "t.exp"
    # on the CPU one blocked measurement is both times: call_us is the rounds' median
    assert entry["extra_info"]["call_us"] == pytest.approx(harness["median_us"])
    assert isinstance(entry["extra_info"]["unstable"], bool)
    assert entry["extra_info"]["calls_per_round"] >= 1
    assert entry["extra_info"]["threads"] is None  # NumPy alone: torch is not loaded, no pool to fix
