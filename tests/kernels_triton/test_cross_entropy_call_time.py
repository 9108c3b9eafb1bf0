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
