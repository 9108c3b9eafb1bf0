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
import time

import torch
import torch.nn.functional as F

CASES = (((512, 600), torch.float32), ((4096, 600), torch.float32), ((64, 50257), torch.bfloat16))
CALLS = 2000
REPEATS = 5
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


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def call_us(fn, calls: int = CALLS) -> float:
    """Median over REPEATS loops of `calls` back-to-back calls, synchronized at each end."""
    for _ in range(20):
        fn()
    sync()
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def call_times() -> list[dict]:
    from kernels_triton import softmax

    rows = []
    for (m, n), dtype in CASES:
        x = torch.randn(m, n, device="cuda", dtype=dtype)
        dy = torch.randn_like(x)
        xg = x.clone().requires_grad_()
        for name, f in (("F.softmax", F.softmax), ("kernels_triton", softmax)):
            forward = call_us(lambda f=f, x=x: f(x, dim=-1))
            both = call_us(lambda f=f, xg=xg, dy=dy: torch.autograd.grad(f(xg, dim=-1), xg, dy))
            rows.append(
                {
                    "shape": [m, n],
                    "dtype": str(dtype)[6:],
                    "impl": name,
                    "forward_us": forward,
                    "forward_backward_us": both,
                }
            )
    for (m, n), _ in CASES:
        ours, ref = (
            next(r for r in rows if r["shape"] == [m, n] and r["impl"] == i)
            for i in ("kernels_triton", "F.softmax")
        )
        ours["forward_ratio_to_F.softmax"] = ours["forward_us"] / ref["forward_us"]
        ours["forward_backward_ratio_to_F.softmax"] = ours["forward_backward_us"] / ref["forward_backward_us"]
    return rows


def first_calls() -> dict:
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
    return {
        "softmax_forward_launch_mocked_us": call_us(lambda: softmax(x), calls=20000),
        "torch.empty_like_us": call_us(lambda: torch.empty_like(x), calls=20000),
        "plan_alone_us": call_us(lambda: plan(x, x), calls=20000),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the results here")
    parser.add_argument(
        "--cpu-mock", action="store_true", help="host time of the eager path, launch mocked (no GPU)"
    )
    parser.add_argument("--skip-first-call", action="store_true")
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
        "method": f"wall time per call: {CALLS} calls back to back, synchronized at the end, median of {REPEATS}",
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
            doc["first_call"] = first_calls()
    text = json.dumps(doc, indent=1)
    print(text)
    if args.json:
        from labtools.atomic import atomic_write_text

        atomic_write_text(args.json, text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
