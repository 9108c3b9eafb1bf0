"""benchmarks/softmax_against_tree.py on a CPU: its usage errors (exit 2, one line, no traceback), no timing
without a CUDA device, and --compare's table of two runs (the figures come from GPUs)."""

import functools
import json

import pytest
from benchmark_cli import assert_usage_error
from benchmark_cli import run as run_benchmark

run = functools.partial(run_benchmark, "softmax_against_tree.py")


@pytest.mark.parametrize(
    "args, named",
    [(["--shapes", "4096x"], "--shapes"), (["--ops", "softmax,gelu"], "--ops"), (["--dirs", "up"], "--dirs"),
     (["--dtypes", "float64"], "--dtypes")],
)  # fmt: skip
def test_bad_arguments_exit_2_naming_the_argument(args, named):
    assert_usage_error(run(*args), named)


def test_compare_prints_the_points_both_runs_timed(tmp_path):
    row = {
        "op": "softmax",
        "dir": "bwd",
        "shape": "256x150000",
        "dtype": "float32",
        "error": 0.0,
        "torch_error": 0.0,
    }
    old = {
        "tree": "old",
        "gpu": "G",
        "rows": [
            {**row, "device_us": 200.0, "call_us": 210.0, "torch_device_us": 100.0},
            {**row, "shape": "1x1", "device_us": 1, "call_us": 1, "torch_device_us": 1},
        ],
    }
    new = {
        "tree": "new",
        "gpu": "G",
        "rows": [{**row, "device_us": 150.0, "call_us": 168.0, "torch_device_us": 101.0}],
    }
    paths = [tmp_path / "old.json", tmp_path / "new.json"]
    for path, doc in zip(paths, (old, new)):
        path.write_text(json.dumps(doc))
    result = run("--compare", *map(str, paths))
    assert result.returncode == 0, result.stderr
    table = [line for line in result.stdout.splitlines() if line.startswith("| softmax")]
    assert table == [
        "| softmax | bwd | 256x150000 | float32 | 200.0 → 150.0 | 0.750 | 210.0 → 168.0 | 0.800 | 1.010 |"
    ]


def test_without_a_cuda_device_it_times_nothing(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is here: the benchmark would time")
    result = run("--shapes", "2x8", "--out", str(tmp_path / "out.json"))
    assert (
        result.returncode == 2 and "no CUDA device" in result.stderr and not (tmp_path / "out.json").exists()
    )
