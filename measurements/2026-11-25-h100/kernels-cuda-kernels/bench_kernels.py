"""Check, then time, kernels_cuda's softmax forward and backward against torch on one GPU.

    python3 scripts/in_place.py python measurements/2026-11-25-h100/kernels-cuda-kernels/bench_kernels.py OUT.json

For each shape and dtype: every candidate is first checked against a float64 reference on fresh
random inputs with NaN-poisoned outputs (max abs error printed beside torch's on the same input),
then timed: device time from CUDA events around one call, L2 flushed (a 256 MiB write) and
~0.2 ms of GPU sleep queued before each (so host work is not counted), median of REPS; and call
time, wall time per call back to back. Bandwidth = compulsory bytes (forward: read x, write y; backward: read y and dy, write dx) /
time, as a fraction of a device-to-device copy timed the same way in the same run.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from kernels_cuda import arrays, codegen
from kernels_cuda import softmax_backward as bw
from kernels_cuda import softmax_variants as sm

REPS = 25
SHAPES = [(1024, 131072), (256, 262144), (4096, 600), (65536, 600)]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
_flush = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")


def time_us(fn) -> float:
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
        _flush.fill_(1)
        torch.cuda._sleep(400_000)  # ~0.2 ms of GPU work queued, so the host's launch work is not timed
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def call_us(fn, n: int = 50) -> float:
    """Call time: wall time per call, back to back, synchronized once at the end."""
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def copy_bandwidth() -> float:
    src = torch.empty(2**29, dtype=torch.uint8, device="cuda").fill_(3)
    dst = torch.empty_like(src)
    us = time_us(lambda: dst.copy_(src))
    return 2 * src.numel() / (us * 1e-6)


def max_err(got, ref) -> float:
    return float((got.double() - ref).abs().max())


def with_auto(**changes):
    """A context that plans the forward with changed AutoConfig fields (restored after)."""

    class Ctx:
        def __enter__(self):
            self.old = sm.AUTO
            sm.set_auto_config(**changes)

        def __exit__(self, *exc):
            sm.set_auto_config(**{f: getattr(self.old, f) for f in changes})

    return Ctx()


BASELINE = Path(__file__).parent / "baseline"  # common.cuh, 03 and 04 before the fp32 accuracy changes


class baseline_sources:
    """Within this block, kernels compile from BASELINE's sources (an A/B of the same plans)."""

    def _switch(self, folder):
        codegen.SOURCE_DIR = folder
        codegen._headers.cache_clear()
        codegen._kernels.clear()
        sm._clear_caches()  # the per-layout calls hold loaded kernels

    def __enter__(self):
        self.old = codegen.SOURCE_DIR
        self._switch(BASELINE)

    def __exit__(self, *exc):
        self._switch(self.old)


def forward_candidates(M, N):
    cands = [("F.softmax", lambda x: F.softmax(x, dim=-1), None), ("cuda.auto", None, ("auto", {}))]
    cands.append(("cuda.auto baseline", None, ("auto", {"baseline": True})))
    if N >= 32768:
        cands += [("cuda.v4_cluster", None, ("v4", {}))]
    return cands


def backward_candidates(N):
    cands = [("torch bwd", lambda y, dy: torch._softmax_backward_data(dy, y, -1, y.dtype), None)]
    cands.append(("cuda.bwd auto", None, {}))
    if N >= 32768:
        cands.append(("cuda.bwd cluster 64KB", None, {"cluster_chunk_bytes": 64 * 1024}))
    return cands


def main(out_path: str) -> int:
    torch.manual_seed(0)
    copy = copy_bandwidth()
    dev = torch.cuda.get_device_properties(0)
    print(f"{dev.name}, torch {torch.__version__}, copy {copy / 1e9:.0f} GB/s", flush=True)
    rows, failures = [], 0

    for M, N in SHAPES:
        for dname, dt in DTYPES.items():
            size = torch.finfo(dt).bits // 8
            x = (torch.randn(M, N, device="cuda") * 4).to(dt)
            ref = torch.softmax(x.double(), dim=-1)
            torch_err = max_err(F.softmax(x, dim=-1), ref)
            for name, fn, variant in forward_candidates(M, N):
                if variant is not None:
                    v, changes = variant
                    base = changes.pop("baseline", False)
                    with with_auto(**changes), baseline_sources() if base else contextlib.nullcontext():
                        launch = sm.plan(v, M, N, dname, sm.full_vec(dname), sm._device(0))
                        with arrays.poison_outputs():
                            err = max_err(sm.softmax(x, variant=v), ref)
                        us = time_us(lambda x=x, v=v: sm.softmax(x, variant=v))
                        call = call_us(lambda x=x, v=v: sm.softmax(x, variant=v))
                    kernel = f"{launch.spec.name} grid={launch.grid} extra={launch.extra}"
                else:
                    err, us, kernel = torch_err, time_us(lambda fn=fn, x=x: fn(x)), ""
                    call = call_us(lambda fn=fn, x=x: fn(x))
                ok = err <= max(2 * torch_err, 1e-6 if dname == "float32" else 8e-3)
                failures += not ok
                frac = 2 * M * N * size / (us * 1e-6) / copy
                rows.append(
                    dict(
                        op="forward",
                        shape=[M, N],
                        dtype=dname,
                        impl=name,
                        us=us,
                        frac=frac,
                        err=err,
                        torch_err=torch_err,
                        ok=ok,
                        kernel=kernel,
                    )
                )
                print(
                    f"fwd {M}x{N} {dname:8s} {name:24s} {us:9.1f} us {100 * frac:6.1f}% call {call:8.1f} us err {err:.2e} "
                    f"(torch {torch_err:.2e}) {'ok' if ok else 'FAIL'} {kernel}",
                    flush=True,
                )
            y = torch.softmax(x.float(), dim=-1).to(dt)
            dy = torch.randn(M, N, device="cuda").to(dt)
            yd, dyd = y.double(), dy.double()
            bref = yd * (dyd - (yd * dyd).sum(-1, keepdim=True))
            torch_berr = max_err(torch._softmax_backward_data(dy, y, -1, dt), bref)
            for name, fn, cfg in backward_candidates(N):
                if fn is None:
                    variant = cfg if isinstance(cfg, str) else "auto"
                    old = bw.AUTO
                    if isinstance(cfg, dict):
                        bw.AUTO = bw.BackwardConfig(**{**old.__dict__, **cfg})
                    try:
                        launch = bw.plan(variant, M, N, dname, sm.full_vec(dname), sm._device(0))
                        with arrays.poison_outputs():
                            err = max_err(bw.softmax_backward(y, dy, variant=variant), bref)
                        us = time_us(
                            lambda y=y, dy=dy, variant=variant: bw.softmax_backward(y, dy, variant=variant)
                        )
                        call = call_us(
                            lambda y=y, dy=dy, variant=variant: bw.softmax_backward(y, dy, variant=variant)
                        )
                    finally:
                        bw.AUTO = old
                    kernel = f"{launch.spec.name} grid={launch.grid} extra={launch.extra}"
                else:
                    err, us, kernel = torch_berr, time_us(lambda fn=fn, y=y, dy=dy: fn(y, dy)), ""
                    call = call_us(lambda fn=fn, y=y, dy=dy: fn(y, dy))
                ok = err <= max(2 * torch_berr, 1e-6 if dname == "float32" else 8e-3)
                failures += not ok
                frac = 3 * M * N * size / (us * 1e-6) / copy
                rows.append(
                    dict(
                        op="backward",
                        shape=[M, N],
                        dtype=dname,
                        impl=name,
                        us=us,
                        frac=frac,
                        err=err,
                        torch_err=torch_berr,
                        ok=ok,
                        kernel=kernel,
                    )
                )
                print(
                    f"bwd {M}x{N} {dname:8s} {name:24s} {us:9.1f} us {100 * frac:6.1f}% call {call:8.1f} us err {err:.2e} "
                    f"(torch {torch_berr:.2e}) {'ok' if ok else 'FAIL'} {kernel}",
                    flush=True,
                )
            torch.cuda.empty_cache()

    # v1 (naive) at the roofline's shape, where every version runs.
    x = torch.randn(16384, 4096, device="cuda")
    with arrays.poison_outputs():
        err = max_err(sm.softmax(x, variant="v1"), torch.softmax(x.double(), -1))
    us = time_us(lambda: sm.softmax(x, variant="v1"))
    call = call_us(lambda: sm.softmax(x, variant="v1"), n=3)
    frac = 2 * x.numel() * 4 / (us * 1e-6) / copy
    print(
        f"fwd 16384x4096 float32  cuda.v1_naive {us:9.1f} us {100 * frac:6.1f}% call {call:8.1f} us err {err:.2e}",
        flush=True,
    )
    rows.append(
        dict(
            op="forward",
            shape=[16384, 4096],
            dtype="float32",
            impl="cuda.v1_naive",
            us=us,
            frac=frac,
            err=err,
        )
    )

    with open(out_path, "w") as f:
        json.dump(
            {
                "device": dev.name,
                "torch": torch.__version__,
                "copy_bytes_per_s": copy,
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "reps": REPS,
                "rows": rows,
            },
            f,
            indent=1,
        )
    print(f"{failures} correctness failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
