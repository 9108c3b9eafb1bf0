# A probe: not part of any package.
"""kernels_cuda's v3 at the sweep's long rows (and 65536x600 fp32) against kernels_triton and
QuACK's cubin (fp32 rows of 1024: QuACK's own kernel launched through kernels_cuda's driver,
`../../row-base/probes/variants.py`), beside a copy of the same bytes (torch's copy_), on whatever
H100 the call gets: is this one of the machines where v3 trails QuACK at these rows? Run it with
the tree before a change and after, to compare them.

    python v3_long.py time ROUNDS   # labtools' time_cuda, a 40 us wait before every launch, in turns
    python v3_long.py ncu           # one launch of each inside cudaProfilerStart/Stop
    python v3_long.py sustain S     # S seconds of back-to-back launches of each at 32768x1024, in turns,
                                    # with the wall clock of each phase (for nvidia-smi's clock and power log)
"""

import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "row-base" / "probes"))
SHAPES = [(32768, 1024, "float32"), (16384, 4096, "float32"), (8192, 8192, "float32"), (32768, 1024, "bfloat16"),
          (16384, 4096, "bfloat16"), (65536, 600, "float32")]  # fmt: skip
WAIT_S, REPS = 40e-6, 60


def forms(m, n, dtype="float32"):
    import kernels_cuda
    import kernels_triton
    import variants

    g = torch.Generator(device="cuda").manual_seed(m + n)
    x = (torch.randn((m, n), device="cuda", generator=g) * 5).to(getattr(torch, dtype))
    out = torch.empty_like(x)
    runs = {"triton": lambda: kernels_triton.softmax(x), "cuda": lambda: kernels_cuda.softmax(x)}
    if ("softmax", dtype, n) in variants.QCUBIN:
        runs["qcubin"] = variants.qcubin_runner("softmax", dtype, (x,), out)
    runs["copy"] = lambda: out.copy_(x)
    ref = torch.softmax(x.double(), -1)
    for name, fn in runs.items():
        if name != "copy":
            out.fill_(float("nan"))
            err = (fn().double() - ref).abs().max().item()
            assert err < (1e-5 if dtype == "float32" else 1e-2), (name, m, n, err)
    return runs


def time_all(rounds):
    from labtools.bench import time_cuda

    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; rounds {rounds} x {REPS}", flush=True)
    for m, n, dtype in SHAPES:
        runs = forms(m, n, dtype)
        names = list(runs)
        samples = {name: [] for name in names}
        for r in range(rounds):
            for name in names if r % 2 == 0 else names[::-1]:
                t = time_cuda(runs[name], [()], min_reps=REPS, max_reps=REPS, batch=REPS, lead_s=WAIT_S)
                samples[name] += t.samples_us
        med = {name: statistics.median(s) for name, s in samples.items()}
        base = med.get("qcubin", med["triton"])
        print(
            f"\nfwd {m}x{n} {dtype}; ratio = qcubin (or triton) / form; % of the copy's bandwidth", flush=True
        )
        for name in names:
            print(
                f"  {name:>8} {med[name]:8.2f} us {base / med[name]:6.3f} {100 * med['copy'] / med[name]:6.1f}%"
            )


def ncu_once():
    cases = [((m, n, dtype), forms(m, n, dtype)) for m, n, dtype in SHAPES]
    torch.cuda.synchronize()
    order = []
    torch.cuda.cudart().cudaProfilerStart()
    for (m, n, dtype), runs in cases:
        for name, fn in runs.items():
            if name != "copy":
                fn()
                torch.cuda.synchronize()
                order.append(f"{m}x{n} {dtype} {name}")
    torch.cuda.cudart().cudaProfilerStop()
    for i, what in enumerate(order):
        print(f"launch {i}: {what}")


def sustain(seconds):
    import time

    runs = forms(32768, 1024)
    for turn in range(2):
        for name in list(runs) if turn == 0 else list(runs)[::-1]:
            fn, n, start = runs[name], 0, time.time()
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            while time.time() - start < seconds:
                for _ in range(50):
                    fn()
                n += 50
                torch.cuda.synchronize()
            end.record()
            torch.cuda.synchronize()
            stop = time.time()
            print(f"{name:>8} {time.strftime('%H:%M:%S', time.localtime(start))}.{int(start % 1 * 1000):03d} -> "
                  f"{time.strftime('%H:%M:%S', time.localtime(stop))}.{int(stop % 1 * 1000):03d}: {n} launches, "
                  f"{1e3 * begin.elapsed_time(end) / n:.2f} us a launch (back to back, L2 not flushed)", flush=True)  # fmt: skip
            time.sleep(1)


if __name__ == "__main__":
    if sys.argv[1] == "time":
        time_all(int(sys.argv[2]))
    elif sys.argv[1] == "sustain":
        sustain(float(sys.argv[2]))
    else:
        ncu_once()
