"""Does a timed launch's device time depend on how long the GPU waits between the L2 flush and
the launch?

labtools.bench.time_cuda flushes the L2 by writing a buffer (which leaves it full of dirty lines),
then keeps the stream busy with a spin kernel for twice the implementation's own host issue time,
so that the host is ahead when the timed launch starts. That wait differs by implementation: one
with a slower host path gets a longer one. If the L2 writes dirty lines back while the GPU spins,
the slower host path would start its kernel on a cleaner L2 and run faster.

Modes, each implementation of a point in turns (order reversed every other round), medians:
  auto         time_cuda as the sweep runs it (each implementation its own wait)
  wait=W       flush, spin W us, launch (the same W for every implementation)
  last=W       spin W us, flush, launch: the flush right before every launch
Run from the repository root: python3 scripts/in_place.py python <this file> [--quick]."""

import statistics
import sys
import time

import torch
from labtools import bench, registry

registry.load_plugins()
QUICK = "--quick" in sys.argv
ROUNDS = 2 if QUICK else 3
REPS = 100 if QUICK else 150
POINTS = [
    ("softmax", (4096, 600), "float32"),
    ("softmax", (4096, 600), "bfloat16"),
    ("softmax_backward", (4096, 600), "float32"),
    ("softmax_backward", (4096, 600), "bfloat16"),
    ("softmax", (65536, 600), "bfloat16"),
    ("softmax", (32768, 1024), "float32"),
    ("softmax", (16, 131072), "bfloat16"),
]
IMPLS = {
    "softmax": ["cuda.auto", "triton.softmax", "quack.softmax", "torch.softmax.cuda", "torch.copy.cuda"],
    "softmax_backward": ["cuda.softmax_backward", "triton.softmax_backward", "quack.softmax_backward",
                         "torch.softmax_backward.cuda"],
}  # fmt: skip
MODES = ["auto", "wait=0", "wait=10", "wait=30", "wait=100", "wait=300", "last=100"]

clock = bench._CudaClock(bench.DEFAULT_FLUSH_BYTES)
CYC_PER_US = clock.cycles_per_us()


def issue_us(fn, sets) -> float:
    """Host time of one call with the GPU idle, the largest of three (what time_cuda's wait uses)."""
    out = []
    for i in range(3):
        t0 = time.perf_counter()
        fn(*sets[i % len(sets)])
        out.append(1e6 * (time.perf_counter() - t0))
        clock.synchronize()
    return max(out)


def timed(fn, sets, mode: str) -> list[float]:
    if mode == "auto":
        return list(bench.time_cuda(fn, sets, min_reps=REPS, max_reps=REPS, time_cap_s=5.0).samples_us)
    kind, wait_us = mode.split("=")
    cycles = int(float(wait_us) * CYC_PER_US)
    for i in range(3):
        fn(*sets[i % len(sets)])
    clock.synchronize()
    samples, i = [], 0
    while len(samples) < REPS:
        pairs = []
        for _ in range(25):
            if kind == "wait":
                clock.flush_l2()
                clock.busy(cycles)
            else:
                clock.busy(cycles)
                clock.flush_l2()
            start, end = clock.event(), clock.event()
            clock.record(start)
            fn(*sets[i % len(sets)])
            clock.record(end)
            pairs.append((start, end))
            i += 1
        clock.synchronize()
        samples += [1e3 * clock.elapsed_ms(s, e) for s, e in pairs]
    return samples


print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {CYC_PER_US:.0f} cycles/us, "
      f"rounds {ROUNDS}, {REPS} samples a round", flush=True)  # fmt: skip
for op, shape, dtype in POINTS:
    impls = []
    for name in IMPLS[op]:
        try:
            impl = registry.get(name)
        except KeyError:
            continue
        if impl.accepts(shape, dtype):
            impls.append((name, impl.fn, bench.input_sets(impl, shape, dtype, 0)))
    issue = {name: issue_us(fn, sets) for name, fn, sets in impls}
    got = {(name, m): [] for name, _, _ in impls for m in MODES}
    for r in range(ROUNDS):
        for m in MODES:
            for name, fn, sets in impls if r % 2 == 0 else impls[::-1]:
                got[(name, m)] += timed(fn, sets, m)
    print(f"\n{op} {shape[0]}x{shape[1]} {dtype}: median us", flush=True)
    print(f"{'impl':28s} {'issue':>6s} {'auto-wait':>9s} " + " ".join(f"{m:>9s}" for m in MODES))
    for name, _, _ in impls:
        meds = [statistics.median(got[(name, m)]) for m in MODES]
        print(f"{name:28s} {issue[name]:6.1f} {2 * issue[name]:9.1f} " + " ".join(f"{v:9.2f}" for v in meds),
              flush=True)  # fmt: skip
