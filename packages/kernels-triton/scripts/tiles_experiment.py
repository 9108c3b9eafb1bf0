"""Experiment: one-pass programs that take several tiles with their loads ahead
(SoftmaxConfig tiles/stages) against the committed pick, at the one-pass shapes short of
the copy bandwidth (NOTES.md, step 3). Device times from labtools.bench.time_cuda (cold
L2, inputs rotated, GPU busy while the host issues), on a CUDA machine:

    python3 scripts/in_place.py python packages/kernels-triton/scripts/tiles_experiment.py --json out.json
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json

import torch
from labtools.bench import l2_bytes, n_input_sets, time_cuda

sm = importlib.import_module("kernels_triton.softmax")

# (kernel, M, N, dtype): bf16 one-pass shapes, 8192 x 8192 fp32, the bf16 backward ones
SHAPES = (
    ("softmax_fwd", 65536, 600, torch.bfloat16), ("softmax_fwd", 32768, 1024, torch.bfloat16),
    ("softmax_fwd", 16384, 4096, torch.bfloat16), ("softmax_fwd", 8192, 8192, torch.float32),
    ("softmax_fwd", 8192, 8192, torch.bfloat16), ("softmax_fwd", 4096, 600, torch.bfloat16),
    ("softmax_bwd", 65536, 600, torch.bfloat16), ("softmax_bwd", 32768, 1024, torch.bfloat16),
    ("softmax_bwd", 8192, 8192, torch.bfloat16),
)
TILES_STAGES = ((4, 2), (8, 2), (8, 3), (16, 3))


def candidates(name: str, M: int, N: int, dtype) -> list[sm.SoftmaxConfig]:
    """The committed pick; one-pass configs where the pick loops; for short rows, tiles
    of 4 and 8 rows (more bytes a program than the tuned space allows); and the
    tiles x stages variants of each one-pass config."""
    pick = sm._committed_pick(name, N, sm._rows_per_sm(M, torch.device("cuda")), dtype, torch.device("cuda"))
    row = sm._next_pow2(N)
    one_pass = [c for c in (pick,) if c is not None and c.block >= N]
    if not one_pass:
        one_pass = [sm.SoftmaxConfig(row, w) for w in (8, 16)]
    if N <= 1024:
        one_pass += [sm.SoftmaxConfig(4 * row, 8), sm.SoftmaxConfig(8 * row, 16)]
    variants = [dataclasses.replace(c, tiles=t, stages=s) for c in one_pass for t, s in TILES_STAGES]
    return list(dict.fromkeys([c for c in (pick,) if c is not None] + one_pass + variants))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    plan = [(name, M, N, dtype, candidates(name, M, N, dtype)) for name, M, N, dtype in SHAPES]
    sm._compile_all([(name, sm._dtype_name(dtype), M, N, c.kwargs())
                     for name, M, N, dtype, configs in plan for c in configs])
    results = []
    for name, M, N, dtype, configs in plan:
        streams = sm.STREAMS[name]
        nbytes = (streams + 1) * M * N * dtype.itemsize
        sets = [tuple(torch.randn(M, N, device="cuda", dtype=dtype) for _ in range(streams + 1))
                for _ in range(n_input_sets(nbytes, l2_bytes()))]
        for config in configs:
            def call(*tensors, config=config):
                sm._launch(name, list(tensors), M, N, config)

            us = time_cuda(call, sets).median_us
            results.append({"kernel": name, "shape": [M, N], "dtype": sm._dtype_name(dtype),
                            "config": sm._config_label(config), "us": round(us, 2), "gbps": round(nbytes / us / 1e3, 1)})
            print(f"{name} {M}x{N} {sm._dtype_name(dtype):9s} {sm._config_label(config):14s} "
                  f"{us:8.1f} us {nbytes / us / 1e3:7.1f} GB/s", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
