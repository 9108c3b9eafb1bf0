"""Time every v3 and v4 launch that could serve a shape, in one GPU call: what auto's dispatch is
chosen from (softmax_variants.AutoConfig and the v3 ladder).

    python -m kernels_cuda.tune                                 # the sweep's shapes, fp32 and bf16
    python -m kernels_cuda.tune --shapes 65536x600 --dtypes bfloat16 --json out/tune.json

For each shape and dtype the candidates are: v3 with each threads-per-row count whose row fits 8
packs a thread or fewer (packs per thread = what the row needs, not rounded up), v4 cluster with
each cluster size whose chunk fits a block, and for rows past 32 KB the online kernel. Each
candidate is first checked against labtools' float64 reference on a sample of rows (output
NaN-poisoned; a wrong candidate is reported and not timed), then timed by labtools.bench.time_cuda
(cold L2, inputs rotated), as is F.softmax. Candidates compile up front, in parallel. Prints one
line per candidate, fastest first within a shape; --json keeps every number and the environment.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kernels_cuda import arrays, codegen
from kernels_cuda import softmax_variants as variants

CHECK_ROWS = 8  # rows compared with the float64 reference per candidate (first, last, spread between)


@dataclass(frozen=True)
class Candidate:
    name: str
    launch: variants.Launch


def fused_candidates(M: int, N: int, dtype: str, vec: int, keep: int = 3) -> list[Candidate]:
    """v3 with the `keep` smallest threads-per-row counts whose row fits 8 packs a thread (16
    element-wide), each thread holding exactly the packs the row needs."""
    packs = N // vec
    out = []
    for tpr in (1 << k for k in range(11)):
        items = math.ceil(packs / tpr)
        if items <= variants.fused_items_max(vec) and len(out) < keep:
            spec = variants.fused_spec(dtype, tpr, items, vec)
            rpb = dict(spec.constants)["RPB"]
            out.append(
                Candidate(
                    f"v3 TPR={tpr} ITEMS={items}",
                    variants.Launch(spec, grid=math.ceil(M / rpb), block=tpr * rpb),
                )
            )
    return out


def cluster_candidates(M: int, N: int, dtype: str, vec: int, device: variants.Device) -> list[Candidate]:
    """v4 with each cluster size whose chunk (8 KB or more) fits a block; 64 KB chunks or more also
    with 512 threads a block (half the passes over shared memory per thread); chunks that auto's
    rule would hold in registers (a few packs a thread) both held and in shared memory."""
    size = arrays.ITEMSIZE[dtype]
    out = []
    for c, chunk in variants.cluster_chunks(N, vec, max(variants.CLUSTER_SIZES)):
        if 8 * 1024 <= chunk * size <= variants.cluster_room(device) and chunk < N:
            for threads in (
                (variants.CLUSTER_THREADS, 512) if chunk * size >= 64 * 1024 else (variants.CLUSTER_THREADS,)
            ):
                spec = variants.cluster_spec(dtype, c, threads=threads)
                out.append(
                    Candidate(
                        f"v4 C={c} chunk={chunk * size // 1024}KB threads={threads}",
                        variants.Launch(
                            spec, grid=c * M, block=threads, shared_mem=chunk * size, extra=(chunk,)
                        ),
                    )
                )
            items = variants.cluster_items(dtype, chunk, variants.AUTO, c * M / device.sms)
            if items:
                spec = variants.cluster_spec(dtype, c, items)
                launch = variants.Launch(spec, grid=c * M, block=variants.CLUSTER_THREADS, extra=(chunk,))
                out.append(Candidate(f"v4 C={c} chunk={chunk * size // 1024}KB held={items}", launch))
    return out


def candidates(M: int, N: int, dtype: str, device: variants.Device) -> list[Candidate]:
    """Every candidate for a contiguous (M, N) input and a fresh output, auto's own plan first.
    v3 and the online kernel move rows in 16-byte packs only where every row is whole packs (else
    element by element, as a launch would: pack_width); v4 always does (it splits off each row's
    unaligned head and tail)."""
    vec = variants.pack_width(dtype, N, (0, 0), (N, N))  # torch allocations are 16-byte aligned
    found = fused_candidates(M, N, dtype, vec)
    if device.cc >= 90 and N * arrays.ITEMSIZE[dtype] > 16 * 1024:
        found += cluster_candidates(M, N, dtype, variants.full_vec(dtype), device)
    if N * arrays.ITEMSIZE[dtype] > 32 * 1024:
        found.append(Candidate("v4 online", variants.plan("v4_online", M, N, dtype, vec, device)))
    auto = variants.plan("auto", M, N, dtype, vec, device, same_offsets=True)
    return [Candidate(f"auto = {auto.spec.name.split('.', 1)[1]}", auto)] + [
        c for c in found if c.launch != auto
    ]


def _check(run, x, y, dtype: str) -> float:
    """Max |error| / tolerance over a sample of rows (<= 1 passes), with y NaN-poisoned first."""
    import numpy as np
    from labtools.ops import softmax_ref, tolerance

    y.fill_(math.nan)
    run(x, y)
    rows = sorted({0, x.shape[0] - 1, *np.linspace(0, x.shape[0] - 1, CHECK_ROWS).astype(int).tolist()})
    got = y[rows].double().cpu().numpy()
    ref = softmax_ref(x[rows].double().cpu().numpy())
    tol = tolerance(dtype)
    err = np.abs(got - ref) / (tol["atol"] + tol["rtol"] * np.abs(ref))
    return float(np.max(np.where(np.isnan(err), np.inf, err)))


def tune(shapes, dtypes, time_cap_s: float) -> dict:
    import torch
    from labtools.bench import l2_bytes, n_input_sets, time_cuda
    from labtools.ceilings import measure_copy

    device_id = torch.cuda.current_device()
    device = variants._device(device_id)
    arch = codegen.device_arch(device_id)
    plans = {(s, d): candidates(*s, d, device) for s in shapes for d in dtypes}
    t0 = time.perf_counter()
    codegen.compile_all([arch], specs=list(dict.fromkeys(c.launch.spec for cs in plans.values() for c in cs)))
    print(f"compiled in {time.perf_counter() - t0:.1f} s", flush=True)
    copy_gbps = measure_copy()
    records = []
    for (shape, dtype), cands in plans.items():
        M, N = shape
        nbytes = 2 * M * N * arrays.ITEMSIZE[dtype]
        sets = []
        for k in range(n_input_sets(nbytes, l2_bytes())):
            g = torch.Generator(device="cuda").manual_seed(k)
            x = torch.randn(shape, generator=g, device="cuda").to(getattr(torch, dtype))
            sets.append((x, torch.empty_like(x)))
        stream = arrays._TorchOps.stream(sets[0][0])
        ref = time_cuda(lambda x, y: torch.softmax(x, dim=-1), sets, time_cap_s=time_cap_s)
        results = [("F.softmax", ref.median_us, 0.0)]
        for cand in cands:

            def run(x, y, launch=cand.launch, stream=stream):
                variants.run_launch(
                    launch,
                    arrays.as_rows(arrays._TorchOps, x),
                    arrays.as_rows(arrays._TorchOps, y),
                    device_id,
                    stream,
                )

            err = _check(run, *sets[0], dtype)
            us = time_cuda(run, sets, time_cap_s=time_cap_s).median_us if err <= 1 else math.nan
            results.append((cand.name, us, err))
        for name, us, err in sorted(results, key=lambda r: (math.isnan(r[1]), r[1])):
            frac = nbytes / (us * 1e-6) / 1e9 / copy_gbps
            line = (
                f"{M}x{N} {dtype:<8} {name:<32} {us:9.1f} us  {frac:6.1%} of copy  "
                f"{ref.median_us / us:5.2f}x F.softmax" + ("" if err <= 1 else f"  WRONG (err/tol {err:.3g})")
            )
            print(line, flush=True)
            records.append(
                {
                    "shape": [M, N],
                    "dtype": dtype,
                    "candidate": name,
                    "median_us": us,
                    "frac_of_copy": frac,
                    "vs_F_softmax": ref.median_us / us,
                    "err_over_tol": err,
                }
            )
        print(flush=True)
        del sets
        torch.cuda.empty_cache()
    return {
        "kind": "kernels_cuda.tune",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "device": torch.cuda.get_device_name(device_id),
        "torch": torch.__version__,
        "nvrtc": "{}.{}".format(*codegen.nvrtc_version()),
        "copy_gbps": copy_gbps,
        "command": " ".join(["python -m kernels_cuda.tune", *sys.argv[1:]]),
        "records": records,
    }


def main(argv: list[str] | None = None) -> int:
    from labtools.sweep import SWEEP_SHAPES, parse_shapes

    parser = argparse.ArgumentParser(prog="python -m kernels_cuda.tune", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=None, help="comma-separated MxN (default: the sweep's shapes)")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--time-cap", type=float, default=0.5, help="seconds of timing per candidate at most")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    shapes = parse_shapes(args.shapes) if args.shapes else SWEEP_SHAPES
    result = tune(shapes, [d.strip() for d in args.dtypes.split(",")], args.time_cap)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
