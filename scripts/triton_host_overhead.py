"""Call time of the Triton softmax against F.softmax: what a user's loop waits for.

Call time: wall time per call, calls issued back to back and synchronized once at the end
(the median of REPEATS such loops), so it is the larger of the host's time to issue a
call and the device's time to run it. Measured forward, and forward + backward through
autograd (torch.autograd.grad), at the shapes in CASES.

First-call latency: a fresh process that has imported torch and kernels_triton and set
up CUDA calls softmax once at a row length it has not seen (and no pick names): the time
until the result is ready. Once with an empty Triton cache (cold: the kernel is compiled)
and once more with the cache the first run filled (warm).

    python3 scripts/in_place.py python scripts/triton_host_overhead.py --json out.json
    TRITON_INTERPRET=1 python scripts/triton_host_overhead.py --cpu-mock

--cpu-mock (no GPU needed): the host work of one eager forward call on the path a CUDA
call takes, the launch itself replaced by a no-op: what the plan cache leaves per call.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F
from labtools import bench
from labtools.atomic import atomic_write_text

CASES = (((512, 600), torch.float32), ((4096, 600), torch.float32), ((64, 50257), torch.bfloat16))
CALLS = 2000
REPEATS = 21
FIRST_CALL_SHAPE = (1000, 12288)  # a row length no committed pick names

FIRST_CALL = """
import time, torch
t0 = time.perf_counter()
import kernels_triton
imported = time.perf_counter() - t0
x = torch.randn({m}, {n}, device="cuda")
torch.cuda.synchronize()
t0 = time.perf_counter()
y = kernels_triton.softmax(x)
torch.cuda.synchronize()
first = time.perf_counter() - t0
assert torch.allclose(y, torch.softmax(x, -1), atol=1e-6)
print(imported, first)
"""


PROFILED = """import cProfile, pstats, io
profile = cProfile.Profile()
y = profile.runcall(kernels_triton.softmax, x)
stream = io.StringIO()
pstats.Stats(profile, stream=stream).sort_stats("cumulative").print_stats(40)
print(stream.getvalue())"""


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def call_us(fns: dict, calls: int = CALLS) -> dict[str, list[float]]:
    """Each function's wall time per call in each of REPEATS rounds, the functions taking
    turns (labtools.bench.time_calls_taking_turns)."""
    return bench.time_calls_taking_turns(fns, calls, REPEATS, synchronize=sync)


def medians(times: dict[str, list[float]]) -> dict[str, float]:
    return {name: statistics.median(t) for name, t in times.items()}


def call_times() -> list[dict]:
    return [row for (m, n), dtype in CASES for row in case_times(m, n, dtype)]


def case_times(m: int, n: int, dtype: torch.dtype) -> list[dict]:
    from kernels_triton import softmax

    x = torch.randn(m, n, device="cuda", dtype=dtype)
    dy = torch.randn_like(x)
    xg = x.clone().requires_grad_()
    softmax(x)
    plan = sys.modules["kernels_triton.softmax"]._FORWARD[
        (x.shape, -1, x.dtype, x.get_device(), x.data_ptr() % 16, None)
    ]
    y = torch.empty_like(x)
    forward_rounds = call_us(
        {"F.softmax": lambda: F.softmax(x, dim=-1), "kernels_triton": lambda: softmax(x, dim=-1)}
    )
    both_rounds = call_us(
        {
            "F.softmax": lambda: torch.autograd.grad(F.softmax(xg, dim=-1), xg, dy),
            "kernels_triton": lambda: torch.autograd.grad(softmax(xg, dim=-1), xg, dy),
        }
    )
    forward, both = medians(forward_rounds), medians(both_rounds)
    parts = call_us(
        {
            "torch.empty_like": lambda: torch.empty_like(x),
            "torch.empty(shape, dtype, device)": lambda: torch.empty(x.shape, dtype=x.dtype, device=x.device),
            "launch plan alone": lambda: plan(x, y),
        }
    )
    parts = medians(parts)
    shape = {"shape": [m, n], "dtype": str(dtype)[6:]}
    rows = [
        {**shape, "impl": impl, "forward_us": forward[impl], "forward_backward_us": both[impl]}
        for impl in ("F.softmax", "kernels_triton")
    ]
    rows[-1]["forward_ratio_to_F.softmax"] = forward["kernels_triton"] / forward["F.softmax"]
    rows[-1]["forward_backward_ratio_to_F.softmax"] = both["kernels_triton"] / both["F.softmax"]
    rows[-1]["forward_paired_ratio"] = bench.paired_ratio(forward_rounds, "kernels_triton", "F.softmax")
    rows[-1]["forward_backward_paired_ratio"] = bench.paired_ratio(both_rounds, "kernels_triton", "F.softmax")
    rows[-1]["parts_us"] = parts
    return rows


def first_calls(profile_out: str | None) -> dict:
    m, n = FIRST_CALL_SHAPE
    code = FIRST_CALL.format(m=m, n=n)
    out = {"shape": [m, n], "dtype": "float32"}
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as home:
        # an empty Triton cache, and no tuned picks (XDG_CACHE_HOME) that could name this N
        env = {**os.environ, "TRITON_CACHE_DIR": cache, "XDG_CACHE_HOME": home}
        for label in ("cold", "warm"):
            run = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            )
            imported, first = map(float, run.stdout.split()[-2:])
            out[f"{label}_s"] = first
            out[f"{label}_import_s"] = imported
        if profile_out:  # where a warm first call spends its time
            profiled = code.replace("y = kernels_triton.softmax(x)", PROFILED)
            run = subprocess.run(
                [sys.executable, "-c", profiled], env=env, capture_output=True, text=True, check=True
            )
            atomic_write_text(profile_out, run.stdout)
    return out


def cpu_mock() -> dict:
    """Host time of softmax(x) on the CUDA call path, the launch a no-op (CPU, interpreter)."""
    from kernels_triton import launch, softmax

    module = sys.modules["kernels_triton.softmax"]
    x = torch.randn(512, 600)
    softmax(x)  # plans this key
    key = next(k for k in module._FORWARD if k[0] == x.shape and k[1] == -1)

    class Compiled:  # what direct_launcher reads from a triton CompiledKernel
        function, packed_metadata = 0, None

        @staticmethod
        def run(*args):
            return None

    real_stream = (
        torch._C._cuda_getCurrentRawStream if hasattr(torch._C, "_cuda_getCurrentRawStream") else None
    )
    torch._C._cuda_getCurrentRawStream = lambda device: 0
    try:
        plan = launch.direct_launcher(
            Compiled, (512, 1, 1), 2, (600, 600, 512, 600, 1024, 1024, 1, False, True, 8, False), 0
        )
    finally:
        if real_stream is not None:
            torch._C._cuda_getCurrentRawStream = real_stream
    module._FORWARD[key] = plan
    return medians(
        call_us(
            {
                "softmax forward, launch mocked": lambda: softmax(x),
                "torch.empty_like": lambda: torch.empty_like(x),
                "launch plan alone, launch mocked": lambda: plan(x, x),
            },
            calls=20000,
        )
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the results here")
    parser.add_argument(
        "--cpu-mock", action="store_true", help="host time of the eager path, launch mocked (no GPU)"
    )
    parser.add_argument("--skip-first-call", action="store_true")
    parser.add_argument("--profile-first-call", help="write a cProfile of a warm first call here")
    args = parser.parse_args()
    import triton

    doc = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": shlex.join([os.path.relpath(sys.argv[0]), *sys.argv[1:]]),
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "triton": triton.__version__,
        },
        "method": f"wall time per call: {CALLS} calls back to back, synchronized at the end, median of {REPEATS} "
        "rounds taking turns; paired ratio: median over rounds of the ratio within a round",
    }
    if args.cpu_mock:
        doc["host"] = platform.processor() or platform.machine()
        doc["cpu_mock"] = cpu_mock()
    else:
        if not torch.cuda.is_available():
            print("needs a CUDA device (or --cpu-mock)", file=sys.stderr)
            return 2
        doc["gpu"] = torch.cuda.get_device_name()
        doc["call_time"] = call_times()
        if not args.skip_first_call:
            doc["first_call"] = first_calls(args.profile_first_call)
    text = json.dumps(doc, indent=1)
    print(text)
    if args.json:
        atomic_write_text(args.json, text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
