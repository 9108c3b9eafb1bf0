# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/graphed-decode/README.md), run from the repository root as .probes/head_latency.py at 85f0389.
"""Probe: latency of one softmax over (M, 616) fp32 rows inside a CUDA graph, as the graphed MiniGPT
step runs it (each call depends on the one before: 100 in place in one graph), for Triton configs
and torch; then the same as a throughput (independent calls on 8 buffers)."""

import statistics as st

import torch
from kernels_triton import SoftmaxConfig, softmax_

dev = torch.device("cuda")
CONFIGS = [None] + [SoftmaxConfig(b, w, False) for b in (1024, 2048) for w in (1, 2, 4, 8)]


def graph_of(fn, bufs, reps=100):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            for b in bufs:
                fn(b)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps // len(bufs)):
            for b in bufs:
                fn(b)
    return g


def time_graph(g, reps=100):
    ts = []
    for _ in range(25):
        a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        e.record()
        e.synchronize()
        ts.append(a.elapsed_time(e) * 1e3 / reps)
    return st.median(ts[5:])


for M in (1, 8, 64):
    x = torch.randn(M, 616, device=dev)
    line = []
    for cfg in CONFIGS:
        name = "auto" if cfg is None else f"{cfg.block}/{cfg.num_warps}"
        try:
            chain = graph_of(lambda b, cfg=cfg: softmax_(b, -1, config=cfg), [x.clone()])
            indep = graph_of(lambda b, cfg=cfg: softmax_(b, -1, config=cfg), [x.clone() for _ in range(4)])
            line.append(f"{name} {time_graph(chain):.2f}/{time_graph(indep):.2f}")
        except Exception as exc:  # noqa: BLE001
            line.append(f"{name} error {type(exc).__name__}: {exc}"[:120])
    bufs = [x.clone()]
    chain = graph_of(lambda b: b.copy_(torch.softmax(b, -1)), bufs)
    tch = graph_of(lambda b: torch.softmax(b, -1), [x.clone()])
    line.append(f"torch {time_graph(tch):.2f} (softmax + copy back chained {time_graph(chain):.2f})")
    print(f"M={M} us a call, chained/independent: " + " | ".join(line), flush=True)
