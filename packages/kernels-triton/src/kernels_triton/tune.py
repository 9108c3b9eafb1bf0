"""python -m kernels_triton.tune: time every candidate config on this GPU and keep the fastest.

Nothing is timed on the call path: a launch takes the tuned pick for its row-length
bucket, else the committed one, else a heuristic (configs.py). This command is how picks
are made. It times forward and backward at each shape and dtype (triton.testing.do_bench:
CUDA events, L2 cleared before each run, median) and merges the winners into this user's
picks file for this GPU and Triton version (configs.user_picks_path), which later
processes read. The merge happens under a file lock and the file is replaced atomically,
so concurrent tunes keep each other's picks; the file carries a SHA-256 of its content.
The packaged autotune_picks.json is never written: to commit picks, tune with --out and
copy that file over it by hand.

Tuning on first use is opt-in: with KERNELS_TRITON_TUNE=1 in the environment, a launch
whose bucket has no tuned pick is tuned (at its own shape) before it runs.

By default it tunes (64, 600), (512, 600), (4096, 600) in fp32, fp16 and bf16, plus every
shape of `lab bench`'s sweep in fp32 and bf16 when labtools is installed.

    python -m kernels_triton.tune [--shape M N ...] [--dtype D ...] [--out PATH] [--workers K]
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import json
import os
import platform
import sys
import time
from pathlib import Path

import torch
import triton

from kernels_triton import _atomic, configs, launch
from kernels_triton.configs import DTYPES, PICKS_FILE, SoftmaxConfig, dtype_name
from kernels_triton.kernels import KERNELS, STREAMS

SHORT_SHAPES = ((64, 600), (512, 600), (4096, 600))
SWEEP_DTYPES = (torch.float32, torch.bfloat16)
PROGRESS_EVERY_S = 3.0


def default_tasks() -> list[tuple[int, int, torch.dtype]]:
    tasks = [(m, n, d) for m, n in SHORT_SHAPES for d in DTYPES]
    try:
        from labtools.sweep import SWEEP_SHAPES
    except ImportError:  # labtools is optional for this package
        return tasks
    return tasks + [(m, n, d) for m, n in SWEEP_SHAPES for d in SWEEP_DTYPES if (m, n, d) not in tasks]


class Progress:
    """One line every PROGRESS_EVERY_S seconds: configs timed, elapsed, estimated remaining."""

    def __init__(self, total: int, out=sys.stderr):
        self.total, self.done, self.out = total, 0, out
        self.start = self.last = time.perf_counter()

    def step(self, what: str) -> None:
        self.done += 1
        now = time.perf_counter()
        if now - self.last >= PROGRESS_EVERY_S or self.done == self.total:
            self.last = now
            elapsed = now - self.start
            eta = elapsed / self.done * (self.total - self.done)
            print(
                f"tune: {self.done}/{self.total} configs, {elapsed:.0f} s elapsed, ~{eta:.0f} s left ({what})",
                file=self.out,
                flush=True,
            )


def _compile_ahead(job: tuple) -> None:
    """Compile one (kernel, dtype, M, N, config) into Triton's on-disk cache without
    launching it, as a launch on contiguous (M, N) tensors would specialise it."""
    name, dtype, m, n, fields = job
    config = SoftmaxConfig.of(fields)
    n_tensors = STREAMS[name] + 1
    meta = launch.tile_meta(config, m, n, [n] * n_tensors, getattr(torch, dtype).itemsize)
    KERNELS[name].warmup(
        *[getattr(torch, dtype)] * n_tensors,
        *[n] * n_tensors,
        m,
        n,
        grid=(1,),
        **meta,
        num_warps=config.num_warps,
    )


def _compile_all(jobs: list[tuple], workers: int | None) -> None:
    """_compile_ahead over `jobs` in parallel processes: Triton compiles one kernel at a
    time per process."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    workers = min(len(jobs), workers or os.cpu_count() or 1, 16)
    if workers < 2:
        return  # the first timed launch compiles instead
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_compile_ahead, jobs, chunksize=4))


def tune(
    tasks, device: int | None = None, workers: int | None = None, progress: Progress | None = None
) -> list[dict]:
    """Time every candidate config of both kernels at each (M, N, dtype) of `tasks` and
    return the winners, each with every config's time (timings_us, fastest first)."""
    if configs.INTERPRET or not torch.cuda.is_available():
        raise RuntimeError("tuning needs a CUDA device, with TRITON_INTERPRET unset")
    device = torch.cuda.current_device() if device is None else device
    sms = launch.num_sms(device)
    seen, unique = set(), []  # one task per pick key: (65536, 600) and (262144, 600) share one
    for m, n, dtype in tasks:
        key = (configs.bucket(n), configs.rows_per_sm(m, sms), dtype)
        if key not in seen:
            seen.add(key)
            unique.append((m, n, dtype))
    jobs = [
        (name, dtype_name(dtype), m, n, c.fields())
        for m, n, dtype in unique
        for name in KERNELS
        for c in configs.candidates(STREAMS[name], n)
    ]
    progress = progress or Progress(len(jobs))
    print(f"tune: compiling {len(jobs)} configs for {len(unique)} shapes", file=progress.out, flush=True)
    _compile_all(jobs, workers)
    picks = []
    for m, n, dtype in unique:
        x = torch.randn(m, n, device=device, dtype=dtype)
        y, dy, dx = torch.empty_like(x), torch.randn_like(x), torch.empty_like(x)
        for name, tensors in (("softmax_fwd", [x, y]), ("softmax_bwd", [y, dy, dx])):
            timings = []
            for config in configs.candidates(STREAMS[name], n):
                ms = triton.testing.do_bench(
                    lambda a=(name, tensors, m, n, config): launch.launch(*a), warmup=5, rep=25
                )
                timings.append((ms, config))
                progress.step(f"{name} {m}x{n} {dtype_name(dtype)} {config.label()}")
            timings.sort(key=lambda tc: tc[0])
            picks.append(
                {
                    "kernel": name,
                    "N": n,
                    "rows_per_sm": configs.rows_per_sm(m, sms),
                    "dtype": dtype_name(dtype),
                    **timings[0][1].fields(),
                    "tuned_at": [m, n],
                    "configs_tried": len(timings),
                    "timings_us": {c.label(): round(1e3 * t, 1) for t, c in timings},
                }
            )
    return picks


def tune_one(name: str, m: int, n: int, dtype: torch.dtype, device: int) -> SoftmaxConfig:
    """Tune the pick key of one launch (both kernels, so a backward finds its pick too),
    save it, and return the config for kernel `name`."""
    picks = tune([(m, n, dtype)], device=device, workers=1)
    save(picks, configs.user_picks_path(launch.gpu_name(device)), launch.gpu_name(device))
    return SoftmaxConfig.of(next(p for p in picks if p["kernel"] == name))


def save(picks: list[dict], path: Path, gpu: str) -> list[dict]:
    """Merge `picks` into the picks file at `path` under an exclusive lock (a pick replaces
    one of the same kernel, dtype, bucket and rows per SM) and write it atomically with
    its SHA-256. Returns every pick now in the file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        merged = {_key(p): p for p in configs.read_user_picks(path, gpu)}
        merged.update({_key(p): p for p in picks})
        every = list(merged.values())
        doc = {
            "format": configs.USER_PICKS_FORMAT,
            "gpu": gpu,
            "triton": triton.__version__,
            "date": datetime.date.today().isoformat(),
            "versions": {"python": platform.python_version(), "torch": torch.__version__},
            "note": "timings_us: every config timed at tuned_at, fastest first, 'BLOCK/num_warps[/L2]' "
            "(/L2: l2_hints): median us (triton.testing.do_bench, L2 cleared before each run)",
            "picks": every,
            "sha256": configs.digest(gpu, every),
        }
        _atomic.atomic_write_text(path, json.dumps(doc, indent=1) + "\n")
    launch.forget_plans()  # shapes planned before launch with the new picks
    return every


def _key(p: dict) -> tuple:
    return (p["kernel"], p["dtype"], configs.bucket(p["N"]), p["rows_per_sm"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernels_triton.tune", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--shape",
        nargs=2,
        type=int,
        action="append",
        metavar=("M", "N"),
        help="tune this shape instead of the defaults; repeatable",
    )
    parser.add_argument(
        "--dtype",
        action="append",
        choices=[dtype_name(d) for d in DTYPES],
        help="with --shape: these dtypes (default: all three); repeatable",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="the picks file to merge into (default: this user's, for this GPU and Triton)",
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="compile processes (default: one per CPU, at most 16)"
    )
    args = parser.parse_args(argv)
    if args.shape and any(m < 1 or n < 1 for m, n in args.shape):
        parser.error("--shape: M and N must be >= 1")
    if args.workers is not None and args.workers < 1:
        parser.error("--workers must be >= 1")
    if args.out is not None and args.out.resolve() == PICKS_FILE.resolve():
        parser.error(
            f"--out: {PICKS_FILE} is the packaged picks file; tune into another file and copy it by hand"
        )
    if configs.INTERPRET or not torch.cuda.is_available():
        print(
            "python -m kernels_triton.tune needs a CUDA device (and TRITON_INTERPRET unset): it times configs on it.",
            file=sys.stderr,
        )
        return 2
    dtypes = [getattr(torch, d) for d in args.dtype] if args.dtype else list(DTYPES)
    tasks = [(m, n, d) for m, n in args.shape for d in dtypes] if args.shape else default_tasks()
    gpu = torch.cuda.get_device_name()
    out = args.out or configs.user_picks_path(gpu)
    start = time.perf_counter()
    picks = tune(tasks, workers=args.workers)
    for p in picks:
        best, us = next(iter(p["timings_us"].items()))
        print(
            f"{p['kernel']:12s} N={p['N']:<7d} rows/SM={p['rows_per_sm']:<3d} {p['dtype']:9s} -> {best} ({us} us)"
        )
    every = save(picks, out, gpu)
    print(f"tuned {len(picks)} picks in {time.perf_counter() - start:.0f} s; {out} now holds {len(every)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
