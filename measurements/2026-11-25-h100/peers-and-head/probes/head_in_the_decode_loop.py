# A frozen probe of 2026-11-25 (measurements/2026-11-25-h100/peers-and-head/README.md), run from the repository root at 52203ac.
"""Generate-like decode, per step split into the model up to the logits, the head, and the wait at
.cpu(); four variants taking turns (rotated order): torch, torch again (an A/A control), the
Triton head in place, the Triton head out of place."""

import statistics as st
import time

import numpy as np
import torch
from minigpt_torch.model import lm_head_softmax
from minigpt_torch.weights import load

dev = torch.device("cuda")
model, tok, _ = load()
model = model.to(dev).eval()
VARIANTS = {
    "torch": ("torch", True),
    "torch_again": ("torch", True),
    "triton": ("triton", True),
    "triton_oop": ("triton", False),
}
names = list(VARIANTS)
ids0 = torch.from_numpy(np.array([tok.encode("Yesterday I")], dtype=np.int64)).to(dev)
acc = {n: {"rest": [], "head": [], "wait": [], "step": []} for n in names}
STEPS = 22
with torch.no_grad():
    for r in range(400):
        k = r % 4
        order = names[k:] + names[:k]
        if (r // 4) % 2:
            order = order[::-1]
        for name in order:
            impl, overwrite = VARIANTS[name]
            idx = ids0
            rest = head = wait = 0.0
            torch.cuda.synchronize()
            t_start = time.perf_counter()
            for _ in range(STEPS):
                t0 = time.perf_counter()
                logits = model.logits(idx)
                t1 = time.perf_counter()
                probs = lm_head_softmax(logits, impl, overwrite=overwrite)[:, -1]
                t2 = time.perf_counter()
                p = probs.cpu().numpy()
                t3 = time.perf_counter()
                rest += t1 - t0
                head += t2 - t1
                wait += t3 - t2
                idx = torch.cat([idx, torch.tensor([[int(p.argmax())]], device=dev)], 1)
            total = time.perf_counter() - t_start
            if r >= 40:
                for part, v in (("rest", rest), ("head", head), ("wait", wait), ("step", total)):
                    acc[name][part].append(v / STEPS * 1e6)
for part in ("rest", "head", "wait", "step"):
    line = f"{part:5s} us/step:"
    for name in names:
        ratios = [a / b for a, b in zip(acc[name][part], acc["torch"][part])]
        line += f"  {name} {st.median(acc[name][part]):.2f} (paired {st.median(ratios):.4f}, sum {sum(acc[name][part]) / sum(acc['torch'][part]):.4f})"
    print(line, flush=True)
