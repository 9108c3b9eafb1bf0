"""python -m kernels_triton.tune: time every candidate config on this GPU and keep the fastest.

Forward and backward at each shape and dtype the tile kernels take; the winners, a pick a (kernel, dtype, N,
rows an SM), go into this user's picks file for this GPU and Triton, or with --commit into this GPU's section
of autotune_picks.json. Default shapes: SHORT_SHAPES in every dtype, `lab bench`'s sweep in fp32 and bf16.

    python -m kernels_triton.tune [--sweep | --shape M N ...] [--dtype D ...] [--commit]"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import json
import multiprocessing
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch
import triton

from kernels_triton import configs, launch
from kernels_triton.configs import DTYPES, PICKS_FILE, SoftmaxConfig, dtype_name, next_pow2
from kernels_triton.kernels import KERNELS, STREAMS

SHORT_SHAPES = ((64, 600), (512, 600), (4096, 600))
SWEEP_DTYPES = (torch.float32, torch.bfloat16)
NOTE = "timings_us: each config at tuned_at, fastest first, BLOCK/num_warps[/L2][/W], median us (do_bench, L2 cleared)"


def default_tasks(sweep_only: bool = False) -> list[tuple[int, int, torch.dtype]]:
    tasks = [] if sweep_only else [(m, n, d) for m, n in SHORT_SHAPES for d in DTYPES]
    try:
        from labtools.sweep import SWEEP_SHAPES
    except ImportError:  # labtools is optional for this package
        return tasks
    return tasks + [(m, n, d) for m, n in SWEEP_SHAPES for d in SWEEP_DTYPES if (m, n, d) not in tasks]


def _compile_ahead(job: tuple) -> None:
    """Compile one job into Triton's disk cache, as a launch would."""
    name, dtype, m, n, fields = job
    config, k, dtype = SoftmaxConfig.of(fields), STREAMS[name] + 1, getattr(torch, dtype)
    meta = launch.tile_meta(config, m, n, [n] * k, dtype.itemsize)
    KERNELS[name].warmup(*[dtype] * k, *[n] * k, m, n, grid=(1,), **meta, num_warps=config.num_warps)


def tune(tasks) -> list[dict]:
    """Time every candidate config of both kernels at each tile task (one a pick key); the winners, all times."""
    device = torch.cuda.current_device()
    sms, where = launch.num_sms(device), torch.device("cuda", device)
    rows_per_sm = lambda m: min(64, next_pow2(-(-m // sms)))  # noqa: E731 - picks are tuned at up to 64 rows an SM
    keys = {(n, rows_per_sm(m), d): (m, n, d) for m, n, d in reversed(tasks)}
    unique = [t for t in reversed(keys.values()) if launch.route("softmax_fwd", *t, where) == "tiles"]
    jobs = [(k, dtype_name(d), m, n, c.fields()) for m, n, d in unique for k in KERNELS
            for c in configs.candidates(STREAMS[k], n, d.itemsize)]  # fmt: skip
    print(f"tune: compiling {len(jobs)} configs for {len(unique)} shapes", file=sys.stderr, flush=True)
    workers = min(len(jobs), os.cpu_count() or 1, 16)
    if workers >= 2:  # Triton compiles one kernel at a time a process
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            list(pool.map(_compile_ahead, jobs, chunksize=4))
    picks, start = [], time.perf_counter()
    for i, (m, n, dtype) in enumerate(unique):
        x = torch.randn(m, n, device=device, dtype=dtype)
        y, dy, dx = torch.empty_like(x), torch.randn_like(x), torch.empty_like(x)
        for name, tensors in (("softmax_fwd", [x, y]), ("softmax_bwd", [y, dy, dx])):
            timings = []
            for c in configs.candidates(STREAMS[name], n, dtype.itemsize):
                run = lambda c=c, name=name, ts=tensors: launch.launch(name, ts, m, n, c, form="tiles")  # noqa: E731, B023
                timings.append((triton.testing.do_bench(run, warmup=5, rep=25), c))
            timings.sort(key=lambda tc: tc[0])
            picks.append({"kernel": name, "N": n, "rows_per_sm": rows_per_sm(m), "dtype": dtype_name(dtype),
                          **timings[0][1].fields(), "tuned_at": [m, n], "configs_tried": len(timings),
                          "timings_us": {c.label(): round(1e3 * t, 1) for t, c in timings}})  # fmt: skip
        took = time.perf_counter() - start
        print(f"tune: {i + 1}/{len(unique)} shapes, {took:.0f} s, ~{took / (i + 1) * (len(unique) - i - 1):.0f} s left",
              file=sys.stderr, flush=True)  # fmt: skip
    return picks


def save(picks: list[dict], path: Path, gpu: str) -> list[dict]:
    """Merge `picks` into GPU `gpu`'s card of the picks file at `path` (this user's, or autotune_picks.json
    with --commit) under a file lock, the file replaced whole. Returns the card's picks, all now in it."""
    versions = {"python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__}
    command = " ".join(["python -m kernels_triton.tune", *sys.argv[1:]])
    card = {"date": datetime.date.today().isoformat(), "command": command, "versions": versions, "note": NOTE}
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cards = configs.read_picks(path)
        key = lambda p: (p["kernel"], p["dtype"], p["N"], p["rows_per_sm"])  # noqa: E731 - new replace old
        old = {key(p): p for p in cards.get(gpu, {}).get("picks", [])}
        every = [*(old | {key(p): p for p in picks}).values()]
        cards = dict(sorted((cards | {gpu: card | {"picks": every}}).items()))
        tmp = path.with_name(f".{path.name}.tmp")  # beside it: one file system, an atomic rename
        try:  # a reader sees the old file whole or the new one whole
            tmp.write_text(json.dumps({"format": 2, "cards": cards}, indent=1) + "\n")
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    launch.forget_plans()  # shapes planned before launch with the new picks
    return every


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser("python -m kernels_triton.tune", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", nargs=2, type=int, action="append", metavar=("M", "N"))
    parser.add_argument("--dtype", action="append", choices=[*map(dtype_name, DTYPES)], help="with --shape")
    parser.add_argument("--sweep", action="store_true", help="the sweep's shapes alone, fp32 and bf16")
    parser.add_argument("--commit", action="store_true", help=f"into this GPU's section of {PICKS_FILE.name}")
    args = parser.parse_args(argv)
    if args.shape and any(m < 1 or n < 1 for m, n in args.shape):
        parser.error("--shape: M and N must be >= 1")
    if configs.INTERPRET or not torch.cuda.is_available():
        print("python -m kernels_triton.tune needs a CUDA device (and TRITON_INTERPRET unset): it times configs on it",
              file=sys.stderr)  # fmt: skip
        return 2
    dtypes = [getattr(torch, d) for d in args.dtype or map(dtype_name, DTYPES)]
    tasks = [(m, n, d) for m, n in args.shape for d in dtypes] if args.shape else default_tasks(args.sweep)
    gpu, start, picks = torch.cuda.get_device_name(), time.perf_counter(), tune(tasks)
    for p in picks:
        best, us = next(iter(p["timings_us"].items()))
        print(f"{p['kernel']} N={p['N']} rows/SM={p['rows_per_sm']} {p['dtype']} -> {best} ({us} us)")
    out = PICKS_FILE if args.commit else configs.user_picks_path(gpu)
    every = save(picks, out, gpu)
    print(f"tuned {len(picks)} picks in {time.perf_counter() - start:.0f} s; {out} [{gpu}]: {len(every)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
