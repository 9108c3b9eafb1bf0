# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/graphed-decode/README.md), run from the repository root as .probes/graph_decode.py at 1325ddc.
"""Probe: MiniGPT decode steps as CUDA graphs (one graph per batch size: ids right-padded to the
context, the next-token position an index tensor), with the Triton LM-head softmax against
F.softmax. Device time a replayed step (CUDA events over 200 replays, heads in turns, median of
rounds) and wall time of a step as a decode runs it (ids to the device, replay, probabilities to
the host), beside the eager step."""

import statistics as st
import time

import torch
from minigpt_torch.model import lm_head_softmax
from minigpt_torch.weights import load

dev = torch.device("cuda")
model, tok, _ = load()
model = model.to(dev).eval()
cfg = model.config
V, L = cfg.vocab_size, cfg.block_size


def body(idx):
    T = idx.shape[1]
    x = model.tok_emb(idx) + model.pos_emb(torch.arange(T, device=dev))
    for blk in model.blocks:
        x = blk(x)
    return x


class Graphed:
    def __init__(self, B, impl):
        self.idx = torch.zeros(B, L, dtype=torch.long, device=dev)
        self.pos = torch.zeros(B, dtype=torch.long, device=dev)
        self.rows = torch.arange(B, device=dev)
        self.impl = impl
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s), torch.no_grad():
            for _ in range(3):
                self.out = self.step()
        torch.cuda.current_stream().wait_stream(s)
        self.g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.g), torch.no_grad():
            self.out = self.step()

    def step(self):
        x = body(self.idx)[self.rows, self.pos]  # (B, C): the hidden state at each row's last token
        return lm_head_softmax(model.lm_head(model.ln_f(x)), self.impl, overwrite=True)

    def __call__(self, ids_cpu):  # ids (B, T) on the host
        B, T = ids_cpu.shape
        self.idx[:, :T].copy_(ids_cpu, non_blocking=False)
        self.pos.fill_(T - 1)
        self.g.replay()
        return self.out.cpu()


for B in (1, 64):
    ids = torch.randint(0, V, (B, 20))
    gs = {impl: Graphed(B, impl) for impl in ("triton", "torch")}
    # same probabilities as the eager model at the last position
    with torch.no_grad():
        ref = model(ids.to(dev))[:, -1].double().cpu()
        for impl, g in gs.items():
            p = g(ids).double()
            print(
                f"B={B} {impl}: max |graph - eager| {(p - ref).abs().max().item():.2e}, argmax same {(p.argmax(-1) == ref.argmax(-1)).all().item()}"
            )
    dev_us = {k: [] for k in gs}
    for r in range(12):
        for impl in list(gs) if r % 2 == 0 else list(gs)[::-1]:
            g = gs[impl].g
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            s.record()
            for _ in range(200):
                g.replay()
            e.record()
            e.synchronize()
            if r >= 2:
                dev_us[impl].append(s.elapsed_time(e) * 1e3 / 200)
    wall = {k: [] for k in gs}
    for r in range(12):
        for impl in list(gs) if r % 2 == 0 else list(gs)[::-1]:
            t0 = time.perf_counter()
            for _ in range(100):
                gs[impl](ids)
            if r >= 2:
                wall[impl].append((time.perf_counter() - t0) * 1e6 / 100)
    eager = {}
    for impl in ("triton", "torch"):
        model.softmax_impl = impl
        with torch.no_grad():
            for _ in range(5):
                model(ids.to(dev))[:, -1].cpu()
            t0 = time.perf_counter()
            for _ in range(50):
                model(ids.to(dev))[:, -1].cpu()
            eager[impl] = (time.perf_counter() - t0) * 1e6 / 50
    pr = [a / b for a, b in zip(dev_us["triton"], dev_us["torch"])]
    print(
        f"B={B}: replayed step, device us: triton {st.median(dev_us['triton']):.2f} torch {st.median(dev_us['torch']):.2f} "
        f"(paired {st.median(pr):.4f}, range {min(pr):.4f}-{max(pr):.4f})"
    )
    pw = [a / b for a, b in zip(wall["triton"], wall["torch"])]
    print(
        f"B={B}: graph step wall us: triton {st.median(wall['triton']):.1f} torch {st.median(wall['torch']):.1f} (paired {st.median(pw):.4f}); "
        f"eager step wall us (T=20): triton {eager['triton']:.1f} torch {eager['torch']:.1f}",
        flush=True,
    )

# the heads alone on (B, V), in graphs: device us a call
for B in (1, 64):
    x = torch.randn(B, V, device=dev)
    res = {}
    for impl in ("triton", "torch"):
        buf = x.clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                lm_head_softmax(buf, impl, overwrite=False)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(100):
                lm_head_softmax(buf, impl, overwrite=False)
        ts = []
        for _ in range(20):
            s0, e0 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s0.record()
            g.replay()
            e0.record()
            e0.synchronize()
            ts.append(s0.elapsed_time(e0) * 1e3 / 100)
        res[impl] = st.median(ts[3:])
    print(
        f"head alone in a graph, ({B}, {V}) fp32: triton {res['triton']:.2f} us, torch {res['torch']:.2f} us a call"
    )
