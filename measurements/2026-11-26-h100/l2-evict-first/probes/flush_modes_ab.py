"""Device time of kernels_cuda and kernels_triton at rows of 600 (forward and backward, fp32 and
bf16) under three states of the L2 before each timed call: flushed by writing a buffer of twice
its size (labtools' default, as triton.testing.do_bench: the L2 is left full of dirty lines),
flushed by reading such a buffer (clean lines), and not flushed. labtools.bench.time_cuda,
median, best of two rounds. Run once from each tree of an A/B (scripts/in_place.py of that tree);
the label names the tree in the output."""

import sys

import torch
from labtools import bench, registry

label = sys.argv[1]
registry.load_plugins()
flush_buf = torch.empty(2 * bench.l2_bytes() // 4, dtype=torch.float32, device="cuda")
sink = torch.empty(1, device="cuda")


def read_flush(self):
    torch.sum(flush_buf, dim=0, keepdim=True, out=sink)


write_flush = bench._CudaClock.flush_l2
MODES = {
    "write": (write_flush, bench.DEFAULT_FLUSH_BYTES),
    "read": (read_flush, bench.DEFAULT_FLUSH_BYTES),
    "none": (write_flush, 0),
}
IMPLS = {
    "softmax": ["cuda.auto", "triton.softmax"],
    "softmax_backward": ["cuda.softmax_backward", "triton.softmax_backward"],
}
for shape in ((4096, 600), (65536, 600)):
    for op, names in IMPLS.items():
        for dtype in ("float32", "bfloat16"):
            for mode, (flush, nbytes) in MODES.items():
                bench._CudaClock.flush_l2 = flush
                line = {}
                for _ in range(2):
                    for name in names:
                        impl = registry.get(name)
                        sets = bench._inputs(impl, shape, dtype, 0)
                        us = bench.time_cuda(impl.fn, sets, time_cap_s=0.3, flush_bytes=nbytes).median_us
                        line[name] = min(us, line.get(name, us))
                print(
                    f"{label} {shape[0]}x{shape[1]} {op:16s} {dtype:8s} flush={mode:5s} "
                    + " | ".join(f"{k} {v:7.2f}" for k, v in line.items()),
                    flush=True,
                )
bench._CudaClock.flush_l2 = write_flush
