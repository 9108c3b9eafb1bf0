"""benchmarks/cross_entropy_call_time.py on a CPU: its usage errors (exit 2, one line, no traceback), no timing
without a CUDA device, and --table's markdown of a run (the figures come from GPUs)."""

import functools
import json

import pytest
from benchmark_cli import assert_usage_error
from benchmark_cli import run as run_benchmark

run = functools.partial(run_benchmark, "cross_entropy_call_time.py")


@pytest.mark.parametrize(
    "args, named",
    [(["--shapes", "2048x"], "--shapes"), (["--dtypes", "float64"], "--dtypes"), (["--reduction", "none"], "--reduction"),
     (["--calls", "0"], "--calls"), (["--rounds", "-1"], "--rounds")],
)  # fmt: skip
def test_bad_arguments_exit_2_naming_the_argument(args, named):
    assert_usage_error(run(*args), named)


def test_without_a_cuda_device_it_times_nothing_and_says_why():
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is here: the script would time")
    result = run("--shapes", "8x600")
    assert result.returncode == 2 and "no CUDA device" in result.stderr and result.stdout == "", result.stderr


def test_table_prints_a_run(tmp_path):
    report = {
        "gpu": "G",
        "date": "D",
        "reduction": "mean",
        "versions": {"torch": "T"},
        "skipped": {"kernels_cuda": "not importable (ImportError: x)"},
        "rows": [
            {"shape": "2048x600", "dtype": "float32", "impl": "F.cross_entropy", "step_us": 182.6,
             "forward_us": 19.0, "clone_us": 8.8},
            {"shape": "2048x600", "dtype": "float32", "impl": "kernels_triton", "step_us": 347.5,
             "forward_us": 85.0, "clone_us": 8.8},
        ],
    }  # fmt: skip
    path = tmp_path / "run.json"
    path.write_text(json.dumps(report))
    result = run("--table", str(path))
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| 2048x600")]
    assert rows == [
        "| 2048x600 | float32 | F.cross_entropy | 182.6 | 19.0 | 8.8 |",
        "| 2048x600 | float32 | kernels_triton | 347.5 | 85.0 | 8.8 |",
    ]
    assert "G, D, the mean loss" in result.stdout and "kernels_cuda: skipped, not importable" in result.stdout


def test_profile_ranks_a_steps_own_host_time():
    """--profile's table, from CPU functions: the costly callee first, per call of the function profiled."""
    import importlib.util

    from benchmark_cli import BENCHMARKS

    spec = importlib.util.spec_from_file_location("call_time", BENCHMARKS / "cross_entropy_call_time.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    def costly():
        return sorted(range(200000), reverse=True)

    def cheap():
        return len("x")

    out = bench.profile({"step": lambda: (costly(), cheap())}, calls=5, top=3)
    lines = out.splitlines()
    assert lines[0].startswith("step: ") and len(lines) == 4, out
    own, total, ncalls = (float(v) for v in lines[1].split()[:3])
    assert "sorted" in lines[1] and ncalls == 1.0 and 0 < own <= total, out


def test_profile_needs_a_positive_count():
    assert_usage_error(run("--profile", "0"), "--profile")
