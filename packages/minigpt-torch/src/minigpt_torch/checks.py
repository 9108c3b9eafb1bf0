"""The port's correctness checks, run and recorded by `lab run` (labtools plugin entry
point `minigpt_torch = "minigpt_torch.checks:register"`).

- minigpt_torch.port (CPU): the shipped model on `example_inputs()` (ids (2, 16), seed 42),
  eval mode, one thread: fp32 logits and probabilities within atol = rtol = 1e-5 of the
  NumPy model's ("byte equivalence at fp32 CPU", the lab's contract), and fp64 within 1e-12.
- minigpt_torch.kernel_swap (CUDA): the LM head's Triton softmax against the CPU path on
  the example inputs and the probe prompts: the largest probability difference (must be
  <= 1e-3), whether any top-1 token changed (must not), and "Yesterday I"'s top 5 on CUDA
  (must all be past-simple verbs).
"""

from __future__ import annotations

import numpy as np
import torch
from labtools.registry import Check, register_check
from minigpt_np.evaluate import PROBES
from minigpt_np.lexicon import PAST_SIMPLE

from minigpt_torch.weights import example_inputs, from_numpy, shipped_checkpoint

FP32_TOL = 1e-5
FP64_TOL = 1e-12
SWAP_TOL = 1e-3


def port_check() -> dict:
    np_model, x = shipped_checkpoint().model, example_inputs()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        diffs, fp32_equal = {}, True
        for dtype in (np.float32, np.float64):
            npm = np_model.astype(dtype)
            tm = from_numpy(npm)
            with torch.no_grad():
                logits, probs = tm.logits(x).numpy(), tm(x).numpy()
            ref_logits, ref_probs = npm.forward(x.numpy()), npm.probs(x.numpy())
            diffs[dtype] = float(max(np.abs(logits - ref_logits).max(), np.abs(probs - ref_probs).max()))
            if dtype == np.float32:
                fp32_equal = np.allclose(logits, ref_logits, atol=FP32_TOL, rtol=FP32_TOL) and np.allclose(
                    probs, ref_probs, atol=FP32_TOL, rtol=FP32_TOL
                )
    finally:
        torch.set_num_threads(threads)
    return {
        "passed": bool(fp32_equal and diffs[np.float64] <= FP64_TOL),
        "byte_equivalence_at_fp32_cpu": "passed" if fp32_equal else "failed",
        "max_abs_diff_to_numpy_reference": diffs[np.float32],
        "fp64_max_abs_diff": diffs[np.float64],
    }


def probability_rows(model, tokenizer, device) -> torch.Tensor:
    """(2 * 16 + len(PROBES), V) on the CPU: every position of example_inputs(), then
    each probe prompt's last position."""
    with torch.no_grad():
        rows = [model(example_inputs().to(device)).flatten(0, 1)]
        rows += [model(torch.from_numpy(tokenizer.encode(p))[None].to(device))[0, -1:] for p in PROBES]
    return torch.cat(rows).cpu()


def kernel_swap_check() -> dict:
    ckpt = shipped_checkpoint()
    p_cpu = probability_rows(from_numpy(ckpt.model, torch.float32), ckpt.tokenizer, "cpu")
    cuda = from_numpy(ckpt.model, torch.float32).cuda()  # use_triton_softmax: the Triton LM head
    p_cuda = probability_rows(cuda, ckpt.tokenizer, "cuda")
    max_diff = float((p_cuda - p_cpu).abs().max())
    top1_changed = not torch.equal(p_cuda.argmax(-1), p_cpu.argmax(-1))
    yesterday = p_cuda[len(p_cuda) - len(PROBES) + PROBES.index("Yesterday I")]
    top5 = [ckpt.tokenizer.vocab[i] for i in torch.topk(yesterday, 5).indices.tolist()]
    return {
        "passed": bool(not top1_changed and max_diff <= SWAP_TOL and all(w in PAST_SIMPLE for w in top5)),
        "kernel_swap_changes_top1_token": bool(top1_changed),
        "max_prob_diff_vs_cpu": max_diff,
        "yesterday_i_top5_cuda": top5,
    }


def register() -> None:
    register_check(Check("minigpt_torch.port", port_check, needs_cuda=False,
                         doc="PyTorch port equals the NumPy MiniGPT (fp32 1e-5, fp64 1e-12) on the CPU"))  # fmt: skip
    register_check(Check("minigpt_torch.kernel_swap", kernel_swap_check, needs_cuda=True,
                         doc="Triton LM-head softmax on CUDA vs the CPU path: probabilities, top-1"))  # fmt: skip
