#!/usr/bin/env python3
"""Call time of kernels_cuda.softmax against F.softmax on a CUDA machine, and what a launch costs.

Four parts, one JSON (GPU, versions, date, command with every record):

1. Wall time per call: `calls` calls back to back on one input, synchronized once at the end,
   divided by `calls`; the median of `repeats` such loops, the implementations taking turns
   loop by loop (a drift of the host's speed hits them alike). F.softmax and kernels_cuda (auto) at
   512x600 fp32, 4096x600 fp32 and 64x50257 bf16; with --before DIR, also the kernels_cuda found
   in DIR (an older checkout's packages/kernels-cuda/src), timed in a child process in turns
   with F.softmax there: compare the two paired ratios, not the times (the host's speed may
   differ between the processes). So is the ctypes-launcher run below.
2. First call at a row length the process has not seen (1000x12288 fp32), each in a fresh
   process: with an empty kernel cache (cold: NVRTC runs) and with the cache the cold run left
   (warm). F.softmax's first call at the same shape is timed in the same processes.
3. Launchers: one planned kernel (auto's at 512x600 fp32) launched into a given output by CuPy's
   RawKernel, by ctypes `cuLaunchKernel` on pre-packed arguments (what kernels_cuda uses), by
   cuda-python's `cuLaunchKernel` on the same packed arguments, and by cuda.core's `launch`,
   wherever each is importable. Each launcher's output is checked against F.softmax first.
   kernels_cuda end to end is also timed with KERNELS_CUDA_LAUNCHER=ctypes (a child process),
   and the host time of the pieces of a cached call (layout key, allocation, stream handle).
4. Whether NVRTC's log carries ptxas' resource report in a process that imported torch first,
   and which libnvrtc each process loaded.

    python3 scripts/in_place.py python scripts/cuda_call_time.py --json out/call-time.json
    uv run python scripts/cuda_call_time.py --cpu-mock

--cpu-mock (no GPU needed): the host work of one cached call at 512x600 fp32 on a CPU tensor,
the driver's cuLaunchKernel replaced by a no-op that returns success, the rest of the path (layout
key, allocation, stream handle, packed launch) as it runs on a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

SHAPES = (((512, 600), "float32"), ((4096, 600), "float32"), ((64, 50257), "bfloat16"))
FIRST_CALL = ((1000, 12288), "float32")


def wall_us(fn, x, calls: int, repeats: int, sync: bool = True) -> float:
    """fn(x)'s wall time per call: the median of `repeats` loops of `calls` calls, each loop
    synchronized at the end when `sync` (labtools.bench.time_calls_taking_turns, alone)."""
    import torch
    from labtools import bench

    synchronize = torch.cuda.synchronize if sync else (lambda: None)
    loops = bench.time_calls_taking_turns({"fn": lambda: fn(x)}, calls, repeats, synchronize=synchronize)
    return statistics.median(loops["fn"])


def _input(shape, dtype):
    import torch

    return torch.randn(shape, device="cuda").to(getattr(torch, dtype))


def call_times(impls, calls: int, repeats: int) -> list[dict]:
    """Per shape, `repeats` rounds in which every impl runs one timed loop of `calls` calls in
    turn (labtools.bench.time_calls_taking_turns); the median loop, and the paired ratio to
    F.softmax (labtools.bench.paired_ratio)."""
    import torch
    from labtools import bench

    records = []
    for shape, dtype in SHAPES:
        x = _input(shape, dtype)
        for _, fn in impls:
            y = fn(x)
            torch.testing.assert_close(y.float(), torch.softmax(x.float(), -1), atol=1e-2, rtol=1e-2)
        loops = bench.time_calls_taking_turns(
            {name: (lambda fn=fn, x=x: fn(x)) for name, fn in impls},
            calls,
            repeats,
            synchronize=torch.cuda.synchronize,
        )
        for name, _ in impls:
            us = statistics.median(loops[name])
            record = {"impl": name, "shape": list(shape), "dtype": dtype, "call_us": us}
            if "F.softmax" in loops:
                record["paired_vs_F_softmax"] = bench.paired_ratio(loops, name, "F.softmax")
            records.append(record)
            print(f"{name:<24} {shape[0]}x{shape[1]} {dtype:<8} {us:8.2f} us per call", flush=True)
    return records


def first_call(cache: str) -> dict:
    """In this (fresh) process: the first F.softmax and the first kernels_cuda call at an unseen N."""
    import torch

    shape, dtype = FIRST_CALL
    x = _input(shape, dtype)
    torch.cuda.synchronize()
    out = {"shape": list(shape), "dtype": dtype, "cache_dir_entries_before": len(os.listdir(cache))}
    t0 = time.perf_counter()
    torch.softmax(x, -1)
    torch.cuda.synchronize()
    out["torch_first_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    import kernels_cuda

    kernels_cuda.softmax(x)
    torch.cuda.synchronize()
    out["kernels_cuda_first_s"] = time.perf_counter() - t0  # import included
    return out


def nvrtc_log_check(with_torch: bool) -> dict:
    """Whether NVRTC's program log carries ptxas' -v report in a process that imported torch
    first (or not), and which libnvrtc the process loaded."""
    if with_torch:
        import torch  # noqa: F401

    from kernels_cuda import codegen
    from kernels_cuda import softmax_variants as variants

    _, _, log, _ = codegen._nvrtc_compile(variants.online_spec("float32", 4), "sm_90")
    with open("/proc/self/maps") as maps:
        libs = sorted({line.split()[-1] for line in maps if "nvrtc" in line and "/" in line})
    return {"torch_first": with_torch, "log_chars": len(log), "has_report": "Used" in log, "libnvrtc": libs}


def breakdown(calls: int, repeats: int) -> dict:
    """Host time of the pieces of a cached kernels_cuda call, at 512x600 fp32 (no launch)."""
    import torch
    from kernels_cuda import arrays

    x = _input(*SHAPES[0])
    dev = x.get_device()
    pieces = {
        "layout key, contiguous (shape, dtype, device, data_ptr)": lambda x: (
            (
                x.shape,
                x.dtype,
                x.get_device(),
                x.data_ptr() & 15,
                -1,
                "auto",
            )
            if x.is_contiguous()
            else None
        ),
        "layout key (shape, stride, dtype, device, data_ptr)": lambda x: (
            x.shape,
            x.stride(),
            x.dtype,
            x.get_device(),
            x.data_ptr() & 15,
            -1,
            "auto",
        ),
        "torch.empty_like(x)": torch.empty_like,
        "x.new_empty(shape)": lambda x: x.new_empty((512, 600)),
        "torch.empty(shape, dtype=, device=)": lambda x: torch.empty(
            (512, 600), dtype=x.dtype, device=x.device
        ),
        "current stream handle": lambda x: arrays._torch_stream(dev),
    }
    out = {name: wall_us(fn, x, calls, repeats) for name, fn in pieces.items()}
    for name, us in out.items():
        print(f"{name:<56} {us:8.2f} us", flush=True)
    return out


def cpu_mock(calls: int, repeats: int) -> dict:
    """The cached call's host work on a CPU tensor, cuLaunchKernel a no-op (see the module doc)."""
    import types

    import torch
    from kernels_cuda import _driver, arrays, codegen
    from kernels_cuda import softmax_variants as variants

    class Function:  # what PackedLaunch reads of a loaded kernel
        handle, name, device_id = 0, "softmax (no-op)", 0

    noop = types.SimpleNamespace(CUfunction=int, CUstream=int, cuLaunchKernel=lambda *args: (0,))
    _driver._bindings = lambda: noop
    _driver.device_count = lambda: 1
    codegen.kernel = lambda spec, device_id: Function()
    variants._current_stream = lambda device_index: 0
    arrays._raw_stream = lambda device_index: 0  # the getter kernels_cuda binds to, on a CPU machine
    (M, N), dtype = SHAPES[0]
    x = torch.randn(M, N).to(getattr(torch, dtype))
    ptr = x.data_ptr()
    prepared = variants.prepare((M, N), x.stride(), dtype, -1, "auto", variants.H100, x_address=ptr % 16)
    call = variants._Call(prepared, None, 0)
    variants._torch_calls[variants._torch_key(x, ptr, -1, "auto")] = call
    y = torch.empty_like(x)
    run = call.run
    pieces = {
        "kernels_cuda.softmax(x), cached": lambda x: variants.softmax(x),
        "torch.empty_like(x) (CPU)": torch.empty_like,
        "PackedLaunch.two (launch a no-op)": lambda x: run(0, ptr, ptr),
        "loop and call alone": lambda x: None,
    }
    out = {"shape": [M, N], "dtype": dtype, "torch": torch.__version__, "python": platform.python_version()}
    out["us"] = {name: wall_us(fn, x, calls, repeats, sync=False) for name, fn in pieces.items()}
    for name, us in out["us"].items():
        print(f"{name:<56} {us:8.3f} us", flush=True)
    assert y.shape == x.shape
    return out


def _child(args: list[str], env: dict) -> dict:
    proc = subprocess.run([sys.executable, __file__, *args], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        return {
            "error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"rc {proc.returncode}"
        }
    return json.loads(proc.stdout.strip().splitlines()[-1])


def launchers(calls: int, repeats: int) -> list[dict]:
    """One kernel, one output, several ways to launch it; wall time per launch."""
    import ctypes

    import numpy as np
    import torch
    from kernels_cuda import arrays, codegen
    from kernels_cuda import softmax_variants as variants

    (M, N), dtype = SHAPES[0]
    x = _input((M, N), dtype)
    y = torch.empty_like(x)
    dev = torch.cuda.current_device()
    prepared = variants.prepare(
        (M, N), (N, 1), dtype, -1, "auto", variants._device(dev), x_address=x.data_ptr()
    )
    launch = prepared.launch
    compiled = codegen.compile_spec(launch.spec, codegen.device_arch(dev))
    stream = arrays._torch_stream(dev)
    ref = torch.softmax(x, -1)
    values = (x.data_ptr(), y.data_ptr(), M, N, N, N, *launch.extra)
    types = variants.ARG_TYPES + (ctypes.c_int32,) * len(launch.extra)
    grid, block, smem = launch.grid, launch.block, launch.shared_mem
    ways = {}

    packed = codegen.packed(launch.spec, dev, grid, block, smem, types, values)
    xp, yp = x.data_ptr(), y.data_ptr()
    from kernels_cuda import _driver

    ways[f"kernels_cuda PackedLaunch ({_driver.launcher_name()})"] = lambda: packed.two(stream, xp, yp)

    try:
        import cupy

        fn = cupy.RawModule(path=str(compiled.cubin_path)).get_function(launch.spec.kernel)
        ext = cupy.cuda.ExternalStream(stream, dev)
        ext.use()
        np_args = (np.uint64(xp), np.uint64(yp), np.int64(M), np.int32(N), np.int64(N), np.int64(N))
        ways[f"cupy {cupy.__version__} RawKernel"] = lambda: fn((grid,), (block,), np_args, shared_mem=smem)
    except Exception as exc:  # noqa: BLE001 - report what is not available here
        ways["cupy RawKernel"] = exc

    try:
        try:
            from cuda.bindings import driver
        except ImportError:
            from cuda import cuda as driver
        err, module = driver.cuModuleLoadData(compiled.cubin)
        err2, function = driver.cuModuleGetFunction(module, launch.spec.kernel.encode())
        assert int(err) == 0 and int(err2) == 0, (err, err2)
        slots = [t(v) for t, v in zip(types, values, strict=True)]
        argv = (ctypes.c_void_p * len(slots))(*(ctypes.addressof(s) for s in slots))
        argv_address = ctypes.addressof(argv)
        cu_stream = driver.CUstream(stream)

        def bindings_launch():
            slots[0].value, slots[1].value = xp, yp
            driver.cuLaunchKernel(function, grid, 1, 1, block, 1, 1, smem, cu_stream, argv_address, 0)

        ways["cuda-python cuLaunchKernel, packed"] = bindings_launch
    except Exception as exc:  # noqa: BLE001
        ways["cuda-python cuLaunchKernel"] = exc

    try:
        try:
            from cuda.core import Device, LaunchConfig, ObjectCode, Stream
            from cuda.core import launch as core_launch
        except ImportError:
            from cuda.core.experimental import Device, LaunchConfig, ObjectCode, Stream
            from cuda.core.experimental import launch as core_launch
        Device(dev).set_current()
        kernel = ObjectCode.from_cubin(compiled.cubin).get_kernel(launch.spec.kernel)
        core_stream = Stream.from_handle(stream)
        config = LaunchConfig(grid=grid, block=block, shmem_size=smem)
        core_args = (np.uint64(xp), np.uint64(yp), np.int64(M), np.int32(N), np.int64(N), np.int64(N))
        ways["cuda.core launch"] = lambda: core_launch(core_stream, config, kernel, *core_args)
    except Exception as exc:  # noqa: BLE001
        ways["cuda.core launch"] = exc

    records = []
    for name, way in ways.items():
        if isinstance(way, Exception):
            records.append({"launcher": name, "error": f"{type(way).__name__}: {way}"[:300]})
            print(f"{name:<48} unavailable: {type(way).__name__}: {way}"[:200], flush=True)
            continue
        try:
            y.fill_(float("nan"))
            way()
            torch.cuda.synchronize()
            torch.testing.assert_close(y, ref)
            us = wall_us(lambda _x, way=way: way(), x, calls, repeats)
        except Exception as exc:  # noqa: BLE001
            records.append({"launcher": name, "error": f"{type(exc).__name__}: {exc}"[:300]})
            print(f"{name:<48} failed: {type(exc).__name__}: {exc}"[:200], flush=True)
            continue
        records.append({"launcher": name, "shape": [M, N], "dtype": dtype, "call_us": us})
        print(f"{name:<48} {us:8.2f} us per launch", flush=True)
    return records


def environment() -> dict:
    import torch

    env = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "gpu": torch.cuda.get_device_name(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
    }
    for name in ("cupy", "cuda.bindings", "cuda.core"):
        try:
            module = __import__(name, fromlist=["__version__"])
            env[name] = getattr(module, "__version__", "?")
        except Exception:  # noqa: BLE001
            env[name] = None
    from kernels_cuda import codegen

    env["nvrtc"] = "{}.{}".format(*codegen.nvrtc_version())
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per timed loop (default 2000)")
    parser.add_argument("--repeats", type=int, default=21, help="timed loops per point; the median is kept")
    parser.add_argument("--before", help="an older checkout's packages/kernels-cuda/src, timed the same way")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument(
        "--cpu-mock", action="store_true", help="no GPU: host work of a cached call, launch a no-op"
    )
    parser.add_argument(
        "--child", choices=("call-time", "first-call", "nvrtc-log", "nvrtc-log-torch"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.calls < 1 or args.repeats < 1:
        parser.error("--calls and --repeats must be at least 1")

    if args.child in ("nvrtc-log", "nvrtc-log-torch"):
        print(json.dumps(nvrtc_log_check(with_torch=args.child == "nvrtc-log-torch")))
        return 0
    if args.cpu_mock:
        result = {"kind": "cuda_call_time_cpu_mock", "calls": args.calls, "repeats": args.repeats}
        result.update(cpu_mock(args.calls, args.repeats))
        if args.json:
            from kernels_cuda import _atomic

            _atomic.atomic_write_text(args.json, json.dumps(result, indent=1))
        return 0
    import torch

    if args.child == "first-call":
        print(json.dumps(first_call(os.environ["KERNELS_CUDA_CACHE_DIR"])))
        return 0
    import kernels_cuda

    if args.child == "call-time":  # F.softmax in turns here too: the paired ratio is this process's
        impls = [("F.softmax", lambda x: torch.softmax(x, -1)), ("kernels_cuda", kernels_cuda.softmax)]
        records = call_times(impls, args.calls, args.repeats)
        print(json.dumps([r for r in records if r["impl"] == "kernels_cuda"]))
        return 0

    from kernels_cuda import _driver

    result = {"kind": "cuda_call_time", **environment(), "calls": args.calls, "repeats": args.repeats}
    result["kernels_cuda_launcher"] = _driver.launcher_name()
    print(json.dumps(result, indent=1), flush=True)
    impls = [("F.softmax", lambda x: torch.softmax(x, -1)), ("kernels_cuda", kernels_cuda.softmax)]
    result["call_time"] = call_times(impls, args.calls, args.repeats)
    if args.before:
        with tempfile.TemporaryDirectory() as cache:
            path = os.pathsep.join([args.before, os.environ.get("PYTHONPATH", "")])
            env = {**os.environ, "PYTHONPATH": path, "KERNELS_CUDA_CACHE_DIR": cache}
            # its kernels compiled first, in a process without torch (see nvrtc_log_check)
            subprocess.run([sys.executable, "-m", "kernels_cuda.codegen"], env=env, capture_output=True)
            timing = ["--calls", str(args.calls), "--repeats", str(args.repeats)]
            before = _child(["--child", "call-time", *timing], env)
        for rec in before if isinstance(before, list) else [before]:
            rec["impl"] = "kernels_cuda before"
            result["call_time"].append(rec)
            print(f"before: {rec}", flush=True)
    timing = ["--calls", str(args.calls), "--repeats", str(args.repeats)]
    ctypes_run = _child(["--child", "call-time", *timing], {**os.environ, "KERNELS_CUDA_LAUNCHER": "ctypes"})
    for rec in ctypes_run if isinstance(ctypes_run, list) else [ctypes_run]:
        rec["impl"] = "kernels_cuda, ctypes launcher"
        result["call_time"].append(rec)
        print(f"ctypes launcher: {rec}", flush=True)
    refs = {
        (tuple(r["shape"]), r["dtype"]): r["call_us"] for r in result["call_time"] if r["impl"] == "F.softmax"
    }
    for rec in result["call_time"]:
        if "call_us" in rec:
            rec["vs_F_softmax"] = rec["call_us"] / refs[tuple(rec["shape"]), rec["dtype"]]
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "KERNELS_CUDA_CACHE_DIR": cache}
        result["first_call"] = {"cold": _child(["--child", "first-call"], env)}
        result["first_call"]["warm_disk_cache"] = _child(["--child", "first-call"], env)
    print(json.dumps(result["first_call"], indent=1), flush=True)
    result["nvrtc_log_check"] = [
        _child(["--child", c], dict(os.environ)) for c in ("nvrtc-log", "nvrtc-log-torch")
    ]
    print(json.dumps(result["nvrtc_log_check"]), flush=True)
    result["breakdown_us"] = breakdown(args.calls, args.repeats)
    result["launchers"] = launchers(args.calls, args.repeats)
    if args.json:
        from kernels_cuda import _atomic

        _atomic.atomic_write_text(args.json, json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
