# A frozen probe of 2026-11-26 (measurements/2026-11-26-h100/lm-head-fusion/README.md), run from the repository root as .probes/fused_head.py, with probes/linear_softmax.py as packages/kernels-triton/src/kernels_triton/linear_softmax.py and probes/launch-pointer_launcher.patch applied to 373007c.
"""Probe: the MiniGPT head (final LayerNorm, projection, softmax) inside a greedy decode, torch's ops one by
one against kernels_triton's softmax head and a prototype Triton kernel that fuses all three into one launch.
Per step, host time of the model up to the last block (rest), of the head (head), of the wait at .cpu()
(wait); variants take turns decode by decode, order rotated and reversed. Then generate (continue_batch over
TorchLM) tokens/s, torch head against the fused head, paired."""

import statistics as st
import time

import numpy as np
import torch
import torch.nn.functional as F
from kernels_triton.linear_softmax import linear_softmax
from minigpt_torch.model import lm_head_softmax
from minigpt_torch.weights import load


def fused_head(x, w, b, g, be, eps):
    return linear_softmax(x, w, b, norm=(g, be, eps))


dev = torch.device("cuda")
model, tok, _ = load()
model = model.to(dev).eval()
V = model.config.vocab_size
STEPS = 24
ln, head = model.ln_f, model.lm_head

# correctness against float64
with torch.no_grad():
    for shape in [(1, 3, 64), (64, 26, 64), (5, 7, 64), (1, 1, 64)]:
        x = torch.randn(shape, device=dev) * 3
        ref = F.softmax(
            F.linear(
                F.layer_norm(x.double(), (64,), ln.weight.double(), ln.bias.double(), ln.eps),
                head.weight.double(),
                head.bias.double(),
            ),
            -1,
        )
        tor = F.softmax(head(ln(x)), -1)
        y = fused_head(x, head.weight, head.bias, ln.weight, ln.bias, ln.eps)
        e_f = (y.double() - ref).abs().max().item()
        e_t = (tor.double() - ref).abs().max().item()
        print(f"accuracy {shape}: fused {e_f:.2e} torch {e_t:.2e}")
        assert e_f < 2 * e_t + 1e-7, (e_f, e_t)


def body(idx):
    T = idx.shape[1]
    x = model.tok_emb(idx) + model.pos_emb(torch.arange(T, device=dev))
    for blk in model.blocks:
        x = blk(x)
    return x


VARIANTS = {
    "torch head": lambda x, bt: F.softmax(head(ln(x)), -1),
    "torch ln+linear": lambda x, bt: head(ln(x)),
    "torch ln": lambda x, bt: ln(x),
    "triton head": lambda x, bt: lm_head_softmax(head(ln(x)), "triton", overwrite=True),
    "fused": lambda x, bt: fused_head(x, head.weight, head.bias, ln.weight, ln.bias, ln.eps),
    "no head": lambda x, bt: x,
}


@torch.no_grad()
def decode(fn, prompt_ids):
    idx = torch.from_numpy(prompt_ids).to(dev)
    b = len(prompt_ids)
    spent = [0.0, 0.0, 0.0]
    for _ in range(STEPS):
        t = idx.shape[1]
        t0 = time.perf_counter()
        x = body(idx)
        t1 = time.perf_counter()
        probs = fn(x, (b, t))[:, -1]
        t2 = time.perf_counter()
        nxt = probs.cpu().argmax(-1, keepdim=True)
        t3 = time.perf_counter()
        spent[0] += t1 - t0
        spent[1] += t2 - t1
        spent[2] += t3 - t2
        idx = torch.cat([idx, nxt.to(dev)], dim=1)
    return [s / STEPS * 1e6 for s in spent]


from minigpt_np.corpus import make_corpus  # noqa: E402

sentences = make_corpus(0, 64, seed=2026).val_sentences
all_prompts = np.stack([tok.encode(s[:2]) for s in sentences])
names = list(VARIANTS)
for batch in (1, 64):
    prompt_ids = all_prompts[:batch]
    for name in names:
        decode(VARIANTS[name], prompt_ids)
    acc = {n: [] for n in names}
    rounds = 60
    for r in range(rounds):
        k = r % len(names)
        order = names[k:] + names[:k]
        if (r // len(names)) % 2:
            order = order[::-1]
        for name in order:
            us = decode(VARIANTS[name], prompt_ids)
            if r >= 4:
                acc[name].append(us)
    print(
        f"batch {batch}: host us a step, median over {rounds - 4} decodes of {STEPS} steps "
        "(paired ratio to the torch head: head, step)"
    )
    for name in names:
        rest, hd, wait = (st.median(v[i] for v in acc[name]) for i in range(3))
        ph = st.median(a[1] / b[1] for a, b in zip(acc[name], acc["torch head"]))
        ps = st.median(sum(a) / sum(b) for a, b in zip(acc[name], acc["torch head"]))
        print(
            f"  {name:16s} rest {rest:8.1f}  head {hd:6.2f}  wait {wait:7.1f}  step {rest + hd + wait:8.1f}"
            f"   paired head {ph:.3f} step {ps:.3f}",
            flush=True,
        )

# generate (continue_batch over TorchLM), torch head against the fused head, paired
from minigpt_np.sample import continue_batch  # noqa: E402
from minigpt_torch.adapter import TorchLM  # noqa: E402


class FusedModel(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m, self.config = m, m.config

    def forward(self, idx):
        return fused_head(body(idx), head.weight, head.bias, ln.weight, ln.bias, ln.eps)

    def parameters(self):
        return self.m.parameters()


model.softmax_impl = "torch"
lms = {
    "torch": TorchLM(model),
    "fused": TorchLM(FusedModel(model)),
}
stop_id = tok.ids["."]
for batch in (1, 64):
    ratios, tps = [], {"torch": [], "fused": []}
    batches = [all_prompts[i : i + batch] for i in range(0, 64, batch)]
    for name in lms:  # warm-up
        for p in batches[:2]:
            continue_batch(lms[name], p, stop_id, max_new_tokens=24, greedy=True)
    same = True
    pairs = 0
    while pairs < 96:
        for p in batches:
            res = {}
            order = ("torch", "fused") if pairs % 2 == 0 else ("fused", "torch")
            for name in order:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                new = continue_batch(lms[name], p, stop_id, max_new_tokens=24, greedy=True)
                torch.cuda.synchronize()
                dt = time.perf_counter() - t0
                res[name] = (sum(len(r) for r in new), dt, new)
            same &= [list(r) for r in res["torch"][2]] == [list(r) for r in res["fused"][2]]
            r = {n: res[n][0] / res[n][1] for n in res}
            for n in r:
                tps[n].append(r[n])
            ratios.append(r["fused"] / r["torch"])
            pairs += 1
            if pairs >= 96:
                break
    q = st.quantiles(ratios, n=4)
    print(
        f"generate batch {batch:3d}: fused {st.median(tps['fused']):9.1f} tok/s, torch {st.median(tps['torch']):9.1f} tok/s,"
        f" paired {st.median(ratios):.3f} (quartiles {q[0]:.3f}-{q[2]:.3f}, {len(ratios)} pairs), same tokens {same}",
        flush=True,
    )

# accuracy on the GPU beyond the model: both paths (one tile, looped), fp32 and bf16, against float64
torch.manual_seed(0)
for shape, K, V, dt in [
    ((4,), 768, 50257, torch.float32),
    ((4,), 768, 50257, torch.bfloat16),
    ((3, 26), 64, 616, torch.bfloat16),
    ((64, 26), 64, 616, torch.float32),
    ((7,), 33, 1000, torch.float32),
]:
    x = (torch.randn(*shape, K, device=dev) * 3).to(dt)
    g, be = torch.randn(K, device=dev).to(dt), torch.randn(K, device=dev).to(dt)
    w, b = (torch.randn(V, K, device=dev) / K**0.5).to(dt), torch.randn(V, device=dev).to(dt)
    with torch.no_grad():
        y = linear_softmax(x, w, b, norm=(g, be, 1e-5))
        ref = F.softmax(
            F.linear(F.layer_norm(x.double(), (K,), g.double(), be.double(), 1e-5), w.double(), b.double()),
            -1,
        )
        tor = F.softmax(F.linear(F.layer_norm(x, (K,), g, be, 1e-5), w, b), -1)
    print(
        f"gpu accuracy {shape} K={K} V={V} {dt}: fused {(y.double() - ref).abs().max().item():.2e} "
        f"torch {(tor.double() - ref).abs().max().item():.2e}",
        flush=True,
    )

# device time (CUDA events, back to back, median of 200) at the decode shapes
for shape in [(1, 26, 64), (64, 26, 64)]:
    x = torch.randn(shape, device=dev)
    fns = {
        "torch3": lambda x=x: F.softmax(head(ln(x)), -1),
        "fused": lambda x=x: linear_softmax(x, head.weight, head.bias, norm=(ln.weight, ln.bias, ln.eps)),
    }
    for name, fn in fns.items():
        with torch.no_grad():
            for _ in range(20):
                fn()
            ts = []
            for _ in range(200):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fn()
                e.record()
                e.synchronize()
                ts.append(s.elapsed_time(e) * 1e3)
        print(f"device+launch us {shape} {name}: median {st.median(ts):.2f}", flush=True)
