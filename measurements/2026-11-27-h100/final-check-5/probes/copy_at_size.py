# A probe: not part of any package.
"""torch's copy of exactly the bytes of one sweep shape, timed as lab bench times a softmax (CUDA
events, L2 flushed before each call, median), as a fraction of the 1 GiB copy that lab bench
takes as its ceiling (labtools.ceilings.measure_copy): what a kernel that only streams a tensor
of this size in and out reaches.

    copy_at_size.py SHAPES DTYPES [STREAMS]
    (STREAMS: tensors read, 1 for the forward, 2 for the backward; both by default)"""

import sys

import torch
from labtools.bench import time_cuda
from labtools.ceilings import measure_copy


def main():
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[1].split(",")]
    dtypes = sys.argv[2].split(",")
    streams = [int(s) for s in sys.argv[3].split(",")] if len(sys.argv) > 3 else [1, 2]
    ceiling = measure_copy()
    print(f"copy ceiling (1 GiB, no flush): {ceiling:.0f} GB/s", flush=True)
    for m, n in shapes:
        for dtype in dtypes:
            for k in streams:
                # k inputs read and one output written, as the forward (k = 1) and backward (k = 2)
                src = [torch.randn(m, n, device="cuda").to(getattr(torch, dtype)) for _ in range(k)]
                dst = torch.empty_like(src[0])
                if k == 1:
                    t = time_cuda(dst.copy_, [(src[0],)], time_cap_s=0.5)
                else:
                    t = time_cuda(lambda a, b, d=dst: torch.add(a, b, out=d), [tuple(src)], time_cap_s=0.5)
                gbps = (k + 1) * dst.numel() * dst.element_size() / (t.median_us * 1e-6) / 1e9
                what = "copy" if k == 1 else "add (2 in, 1 out)"
                print(
                    f"{m}x{n} {dtype:8} {what:17} {t.median_us:9.2f} us {gbps:6.0f} GB/s {gbps / ceiling:6.1%} of the ceiling",
                    flush=True,
                )


if __name__ == "__main__":
    main()
