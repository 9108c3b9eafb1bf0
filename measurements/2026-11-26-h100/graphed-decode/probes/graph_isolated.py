# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/graphed-decode/README.md), run from the repository root as .probes/graph_isolated.py at 85f0389.
"""Probe: the graphed MiniGPT step (adapter.GraphedStep) replayed alone, as generate replays it:
one replay then a synchronize, wall and device time, heads in turns; and the whole generate step
(ids in, replay, probabilities out) the same way."""

import statistics as st
import time

import numpy as np
import torch
from minigpt_torch.adapter import GraphedStep
from minigpt_torch.weights import load

model, tok, _ = load()
model = model.to("cuda").eval()
HEADS = ("triton", "torch")
for batch in (1, 64):
    steps = {}
    for head in HEADS:
        model.softmax_impl = head
        steps[head] = GraphedStep(model, batch)
    ids = np.random.default_rng(0).integers(0, model.config.vocab_size, (batch, 20))
    wall = {h: [] for h in HEADS}
    dev = {h: [] for h in HEADS}
    full = {h: [] for h in HEADS}
    for r in range(62):
        for head in HEADS if r % 2 == 0 else HEADS[::-1]:
            s = steps[head]
            ws, ds, fs = [], [], []
            for _ in range(50):
                torch.cuda.synchronize()
                a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                t0 = time.perf_counter()
                a.record()
                s.graph.replay()
                e.record()
                e.synchronize()
                ws.append(time.perf_counter() - t0)
                ds.append(a.elapsed_time(e) * 1e-3)
                t0 = time.perf_counter()
                s(ids)
                fs.append(time.perf_counter() - t0)
            if r >= 2:
                wall[head].append(st.median(ws) * 1e6)
                dev[head].append(st.median(ds) * 1e6)
                full[head].append(st.median(fs) * 1e6)
    for name, d in (("replay+sync wall", wall), ("replay device", dev), ("generate step wall", full)):
        pr = st.median(a / b for a, b in zip(d["triton"], d["torch"]))
        print(
            f"batch {batch:2d} {name:20s}: triton {st.median(d['triton']):8.2f} us, torch {st.median(d['torch']):8.2f} us, paired {pr:.4f}",
            flush=True,
        )
