# A frozen probe of 2026-11-25 (measurements/2026-11-25-h100/cluster-exchange/README.md), run from the repository root as .probes/head_in_decode_parts.py.
"""Where the Triton LM head's host time goes inside a greedy decode (as minigpt_tokens_per_second.py's
head_in_decode runs it: model.logits, the head, .cpu() argmax, next step), variant by variant,
cumulative from the bare launch up to the model's head. Per step: host time of the model up to the
logits (rest), of the head (head), of the wait at .cpu() (wait). Variants take turns decode by
decode, order rotated and reversed."""

import statistics as st
import sys
import threading
import time

import kernels_triton
import numpy as np
import torch
from minigpt_torch.model import lm_head_softmax
from minigpt_torch.weights import load

tsm = sys.modules["kernels_triton.softmax"]
dev = torch.device("cuda")
model, tok, _ = load()
model = model.to(dev).eval()
V = model.config.vocab_size
STEPS = 24
print(
    "threads at start:", [t.name for t in threading.enumerate()], "switch interval", sys.getswitchinterval()
)

PLANS = {}  # (batch, T) -> the in-place plan, found before timing


def key_plan(x):
    return tsm._IN_PLACE.get((x.shape, -1, x.dtype, x.get_device(), x.data_ptr() % 16, None))


def old_softmax_(x, dim=-1, *, config=None):
    """softmax_'s fast path as it was at 77469b4 (torch.compiler.is_compiling, checks before the lookup)."""
    if (
        not torch.compiler.is_compiling()
        and type(x) is torch.Tensor
        and type(dim) is int
        and x.is_contiguous()
        and not x.requires_grad
    ):
        plan = tsm._IN_PLACE.get((x.shape, dim, x.dtype, x.get_device(), x.data_ptr() % 16, config))
        if plan is not None:
            plan(x, x)
            return x
    raise AssertionError("planned before timing")


def _old_module(required=False):
    return kernels_triton


def _old_head(kt, logits, overwrite):
    if overwrite and not logits.requires_grad:
        return old_softmax_(logits, -1)
    return kt.softmax(logits, -1)


def old_lm_head_softmax(logits, impl="auto", *, overwrite=False):
    """minigpt_torch.model.lm_head_softmax's triton branch as it was at 77469b4 (two helper calls)."""
    if impl == "triton":
        return _old_head(_old_module(required=True), logits, overwrite)
    raise AssertionError


VARIANTS = {
    "old triton head": lambda x, b, t: old_lm_head_softmax(x, "triton", overwrite=True),
    "old softmax_": lambda x, b, t: old_softmax_(x, -1),
    "torch head": lambda x, b, t: lm_head_softmax(x, "torch", overwrite=True),
    "triton head": lambda x, b, t: lm_head_softmax(x, "triton", overwrite=True),
    "softmax_": lambda x, b, t: kernels_triton.softmax_(x, -1),
    "key + plan": lambda x, b, t: key_plan(x)(x, x) or x,
    "plan only": lambda x, b, t: PLANS[b, t](x, x) or x,
    "no head": lambda x, b, t: x,
}


@torch.no_grad()
def decode(fn, prompt_ids):
    idx = torch.from_numpy(prompt_ids).to(dev)
    b = len(prompt_ids)
    spent = [0.0, 0.0, 0.0]
    for _ in range(STEPS):
        t = idx.shape[1]
        t0 = time.perf_counter()
        logits = model.logits(idx)
        t1 = time.perf_counter()
        probs = fn(logits, b, t)[:, -1]
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
    with torch.no_grad():  # plan every shape, check the plans against torch
        for t in range(prompt_ids.shape[1], prompt_ids.shape[1] + STEPS):
            x = torch.randn(batch, t, V, device=dev)
            ref = torch.softmax(x.double(), -1)
            y = kernels_triton.softmax_(x, -1)
            assert (y.double() - ref).abs().max() < 1e-6
            PLANS[batch, t] = key_plan(x)
            assert PLANS[batch, t] is not None
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
        rest, head, wait = (st.median(v[i] for v in acc[name]) for i in range(3))
        ph = st.median(a[1] / b[1] for a, b in zip(acc[name], acc["torch head"]))
        ps = st.median(sum(a) / sum(b) for a, b in zip(acc[name], acc["torch head"]))
        print(
            f"  {name:16s} rest {rest:8.1f}  head {head:6.2f}  wait {wait:7.1f}  step {rest + head + wait:8.1f}"
            f"   paired head {ph:.3f} step {ps:.3f}",
            flush=True,
        )
print("threads at end:", [t.name for t in threading.enumerate()])
