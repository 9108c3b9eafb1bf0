#!/usr/bin/env python3
"""Device time of kernels_cuda.softmax_backward's long-row variants side by side, on a CUDA machine.

The registry has one backward entry (`cuda.softmax_backward`, auto); this times each variant as
its own unregistered labtools Implementation through labtools' harness (`bench.measure`: CUDA
events, L2 flushed, inputs rotated, median), with the copy ceiling measured in the same run:

    cluster          07_softmax_backward_cluster.cu, one row at a time a block
    pipelined        08_softmax_backward_cluster_pipelined.cu, its default chunks (<= 64 KB an array)
    pipelined-32KB   08 with 07's chunks (<= 32 KB an array): the same clusters as 07
    auto             what a plain call runs (the dense-call cache included)

Before timing, each entry's result is compared with a float64 reference (one input). Each line
names the kernel, cluster, chunk, piece, slots and grid the variant launched (the pipelined
kernel's grid is the resident clusters the driver reported).

    python3 scripts/in_place.py python scripts/bench_cuda_backward_variants.py --json out/bwd.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

SHAPES = ((256, 262144), (1024, 131072), (4096, 32768))
DTYPES = ("float32", "bfloat16")
# (name, variant, BackwardConfig changes)
VARIANTS = (
    ("cluster", "cluster", {}),
    ("pipelined", "cluster_pipelined", {}),
    ("pipelined-32KB", "cluster_pipelined", {"pipelined_chunk_bytes": 32 * 1024}),
    ("auto", "auto", {}),
)


def launch_of(variant: str, shape, dtype: str) -> str:
    from kernels_cuda import softmax_backward as bw
    from kernels_cuda import softmax_variants as sm

    M, N = shape
    launch = bw.plan(variant, M, N, dtype, sm.full_vec(dtype), sm._device(0), bw.AUTO)
    if launch.spec.source == bw.PIPELINED_SOURCE:
        clusters = bw._resident_clusters(launch.spec, launch.block, launch.shared_mem, 0)
        launch = bw.resident_grid(launch, M, clusters)
    return f"{launch.spec.name} extra={launch.extra} grid={launch.grid} smem={launch.shared_mem}"


def max_error(fn, y, dy) -> float:
    ref = y.double() * (dy.double() - (y.double() * dy.double()).sum(-1, keepdim=True))
    return float((fn(y, dy).double() - ref).abs().max())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the records here")
    parser.add_argument("--time-cap", type=float, default=1.0, help="seconds of timing per entry at most")
    args = parser.parse_args(argv)

    import torch
    from kernels_cuda import softmax_backward as bw
    from labtools import bench
    from labtools.ceilings import measure_copy
    from labtools.registry import Implementation

    copy_gbps = measure_copy()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; copy {copy_gbps:.0f} GB/s", flush=True)
    default, records = bw.AUTO, []
    for shape in SHAPES:
        for dtype in DTYPES:
            y, dy = bench.make_inputs(
                Implementation(None, "softmax_backward", "inputs", "cuda-c", "inputs"), shape, dtype
            )
            for name, variant, changes in VARIANTS:
                bw.AUTO, bw._dense_calls = bw.BackwardConfig(**changes), {}
                try:

                    def fn(y, dy, variant=variant):
                        return bw.softmax_backward(y, dy, -1, variant)

                    impl = Implementation(fn, "softmax_backward", f"cuda.bwd.{name}", "cuda-c", name)
                    err = max_error(fn, y, dy)
                    launch = launch_of(variant, shape, dtype)
                    rec = bench.measure(
                        impl, shape, dtype, copy_gbps=copy_gbps, call_time=False, time_cap_s=args.time_cap
                    )
                finally:
                    bw.AUTO, bw._dense_calls = default, {}
                rec.extra.update({"launch": launch, "max_abs_err": err})
                records.append(rec.to_dict())
                print(
                    f"{shape[0]}x{shape[1]} {dtype:8} {name:15} {rec.median_us:8.1f} us "
                    f"{rec.frac_of_copy:6.1%} of copy  err {err:.2e}  {launch}"
                    + (f"  UNSTABLE: {rec.unstable_why}" if rec.unstable else ""),
                    flush=True,
                )
            del y, dy
            torch.cuda.empty_cache()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "host": platform.node()}
        args.json.write_text(json.dumps({"meta": meta, "copy_gbps": copy_gbps, "records": records}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
