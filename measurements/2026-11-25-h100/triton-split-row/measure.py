"""Check and time kernels_triton.split_row on a CUDA GPU, beside a copy, F.softmax and the
kernels_triton.softmax path, forward and backward, at the shapes of the sweep.

    python3 scripts/in_place.py python measurements/2026-11-25-h100/triton-split-row/measure.py OUT_DIR

Device time: triton.testing.do_bench (CUDA events around each call, L2 cleared before
each by writing a 256 MB buffer, median). Call time: wall-clock per call, CALLS calls
back to back, synchronized at the end. Bandwidth: bytes read + written (forward 2 M N
size, backward 3 M N size) over the device time, as a fraction of a copy of the same
M x N tensor timed the same way in the same run. Before timing, every split-row
configuration is checked against F.softmax (and its backward) in float64 on the same
inputs; the number of fallbacks (a program computing a late peer's partial itself) is
counted over the timed calls.
"""

import datetime
import json
import platform
import sys
import time
from pathlib import Path

import torch
import triton
from kernels_triton import softmax as kt_softmax
from kernels_triton import softmax_backward as kt_softmax_backward
from kernels_triton import split_row as sr
from triton.testing import do_bench

SHAPES = [(1024, 131072), (256, 262144), (4096, 32768)]
DTYPES = [torch.float32, torch.bfloat16]
FWD_CONFIGS = [
    None,
    sr.SplitConfig(4096, 2),
    sr.SplitConfig(2048, 1),
    sr.SplitConfig(8192, 8),
    sr.SplitConfig(16384, 8),
]
BWD_CONFIGS = [None, sr.SplitConfig(2048, 2)]
CALLS = 20


def device_ms(fn):
    return do_bench(fn, warmup=25, rep=150, return_mode="median")


def call_us(fn):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(CALLS):
        fn()
    torch.cuda.synchronize()
    return 1e6 * (time.perf_counter() - t0) / CALLS


def max_rel_err(got, ref):
    """max |got - ref| / max |ref| over rows checked, in float64."""
    return float((got.double() - ref).abs().max() / ref.abs().max())


def measure_shape(M, N, dtype, props, rows):
    """Time every implementation at one shape and dtype; append a row each to `rows`."""
    dev = torch.device("cuda")
    g = torch.Generator(device="cuda").manual_seed(M * 7 + N)
    x = (4 * torch.randn(M, N, generator=g, device="cuda")).to(dtype)
    dy = torch.randn(M, N, generator=g, device="cuda").to(dtype)
    y_ref = torch.softmax(x[:16].double(), -1)
    y = torch.empty_like(x)
    dx = torch.empty_like(x)
    size = x.element_size()
    copy_ms = device_ms(lambda: y.copy_(x))
    copy_bw = 2 * M * N * size / copy_ms / 1e9
    base = {"M": M, "N": N, "dtype": str(dtype).replace("torch.", ""), "copy_TBps": copy_bw}

    def record(direction, impl, ms, us, extra=None):
        moved = (2 if direction == "fwd" else 3) * M * N * size
        r = {**base, "direction": direction, "impl": impl, "device_us": 1e3 * ms, "call_us": us}
        r["fraction_of_copy"] = moved / ms / 1e9 / copy_bw
        r.update(extra or {})
        rows.append(r)
        print(json.dumps(r), flush=True)

    yt = torch.softmax(x, -1)
    record(
        "fwd",
        "F.softmax",
        device_ms(lambda: torch.softmax(x, -1)),
        call_us(lambda: torch.softmax(x, -1)),
    )
    bwd_torch = lambda: torch._softmax_backward_data(dy, yt, -1, dtype)  # noqa: E731
    record("bwd", "torch", device_ms(bwd_torch), call_us(bwd_torch))
    record("fwd", "kernels_triton", device_ms(lambda: kt_softmax(x)), call_us(lambda: kt_softmax(x)))
    kt_bwd = lambda: kt_softmax_backward(yt, dy)  # noqa: E731
    record("bwd", "kernels_triton", device_ms(kt_bwd), call_us(kt_bwd))
    for direction, configs in (("fwd", FWD_CONFIGS), ("bwd", BWD_CONFIGS)):
        applies = sr.applies(M, N, dtype, dev, backward=direction == "bwd")
        for config in configs:
            if direction == "fwd":
                run = lambda c=config: sr.forward(x, y, config=c)  # noqa: E731
                out, ref = y, y_ref
            else:
                run = lambda c=config: sr.backward(yt, dy, dx, config=c)  # noqa: E731
                out, ref = dx, None
            out.fill_(float("nan"))
            try:
                run()
            except ValueError as e:  # more programs a row than fit
                print(f"skip {direction} {M}x{N} {dtype} {config}: {e}", flush=True)
                continue
            torch.cuda.synchronize()
            if direction == "bwd":  # the reference from the same saved output
                ref = yt[:16].double() * (
                    dy[:16].double() - (yt[:16].double() * dy[:16].double()).sum(-1, keepdim=True)
                )
            err = max_rel_err(out[:16], ref)
            nans = int(out.isnan().sum())
            before = sr.fallback_count(dev)
            ms = device_ms(run)
            us = call_us(run)
            torch.cuda.synchronize()
            plan = sr._plan(direction, [x, y] if direction == "fwd" else [yt, dy, dx], config, None)
            used = config or sr._default_config(direction, M, N, props.multi_processor_count)
            label = f"split_row {used.chunk}/{used.num_warps}w" + ("" if config else " (default)")
            extra = {
                "applies": applies,
                "groups": plan.groups,
                "split": plan.split,
                "programs": plan.groups * plan.split,
                "programs_per_sm": plan.programs_per_sm,
                "max_rel_err_vs_f64": err,
                "nans": nans,
                "fallbacks_while_timing": sr.fallback_count(dev) - before,
            }
            record(direction, label, ms, us, extra)


def main(out_dir: Path):
    out_dir.mkdir(parents=True, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    env = {
        "gpu": props.name,
        "sms": props.multi_processor_count,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
    }
    print(json.dumps(env), flush=True)
    rows = []
    for M, N in SHAPES:
        for dtype in DTYPES:
            measure_shape(M, N, dtype, props, rows)
            torch.cuda.empty_cache()
    (out_dir / "results.json").write_text(json.dumps({"env": env, "rows": rows}, indent=1))
    print("\n| shape | dtype | dir | impl | device us | call us | % of copy | fallbacks | err |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['M']}x{r['N']} | {r['dtype']} | {r['direction']} | {r['impl']} | {r['device_us']:.1f} | "
            f"{r['call_us']:.1f} | {100 * r['fraction_of_copy']:.1f} | {r.get('fallbacks_while_timing', '')} | "
            f"{r.get('max_rel_err_vs_f64', '')} |"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
