#!/usr/bin/env python3
"""MiniGPT decoding speed with the Triton LM-head softmax against the same model with F.softmax.

One model (the shipped checkpoint, fp32) and one set of prompts; only `model.softmax_impl`
changes between the two heads, so the weights, prompts and decoded tokens are the same.
Decoding loops, all greedy:

- generate: what `minigpt-torch generate` runs (minigpt_np.sample.continue_batch over
  minigpt_torch.adapter.TorchLM): each step copies the next-token probabilities to the
  host, picks the argmax there and stops a row at "."; tokens = tokens actually produced.
  On CUDA each step is a replayed CUDA graph (TorchLM's default there).
- generate_eager (CUDA only): the same with TorchLM(cuda_graphs=False), every op launched
  from Python: the host sets the pace.
- device: the same model stepped on the device with torch ops only (argmax on the device,
  a fixed number of new tokens, no stop), synchronized once per decode.

For each loop and batch size: warm-up decodes (Triton compiles here), then `--repeats`
repeats (more where a repeat is few batches: at least --min-pairs pairs) in which every batch of
prompts is decoded by the two heads back to back, alternating which goes first, so that the
two decodes of a pair see the same host speed, which drifts by more than the heads differ.
Tokens per second of a head: its tokens / its wall time over a repeat (CUDA synchronized
after each decode), median over repeats. The paired ratio: the median over all pairs of the
two decodes' tokens/s ratio, with its quartiles. The LM-head softmax alone is timed too
(`head_alone`), per call on the logits shapes a decode passes it, back to back, and within a
decode (`head_in_decode`: each step's host time split into the model up to the logits, the
head and the wait at `.cpu()`, eagerly), where the rest of the forward runs between two
heads: the head's share of a step, which the decode figures cannot resolve. On CUDA,
`graph_step` is the device time of the graphed step alone, the heads in turns. JSON out (stdout, or --out written
atomically) with GPU name, versions, date and command.

    python3 benchmarks/minigpt_tokens_per_second.py --out tokens_per_second.json          # CUDA
    python3 benchmarks/minigpt_tokens_per_second.py --device cpu --quick                  # smoke test

On the CPU the Triton head runs under Triton's interpreter (TRITON_INTERPRET=1, set here
before Triton loads): correct but far slower, so CPU figures only show that it runs.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import sys
import time

import numpy as np
import torch

HEADS = ("triton", "torch")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                   help="cuda or cpu (default: cuda when there is one)")  # fmt: skip
    p.add_argument("--batch-sizes", default="1,64", help="comma-separated prompts per decode (default 1,64)")
    p.add_argument(
        "--prompts", type=int, default=64, help="prompts decoded per batch size, in batches (default 64)"
    )
    p.add_argument("--prompt-words", type=int, default=2, help="words per prompt, after <bos> (default 2)")
    p.add_argument("--repeats", type=int, default=15, help="timed decodes per head (default 15)")
    p.add_argument("--min-pairs", type=int, default=64,
                   help="timed pairs of decodes (one batch, both heads) at least, per point (default 64)")  # fmt: skip
    p.add_argument("--warmup", type=int, default=3, help="untimed decodes per head first (default 3)")
    p.add_argument("--max-new-tokens", type=int, default=24,
                   help="longest continuation, as minigpt-np generate's (default 24; capped by the context)")  # fmt: skip
    p.add_argument("--quick", action="store_true",
                   help="a smoke test: 2 prompts, batch 1 and 2, 4 new tokens, 1 repeat")  # fmt: skip
    p.add_argument("--out", default=None, help="write the JSON here (atomically) instead of stdout")
    args = p.parse_args(argv)
    if args.quick:
        args.batch_sizes, args.prompts, args.repeats, args.warmup, args.max_new_tokens = "1,2", 2, 1, 1, 4
        args.min_pairs = 1
    try:
        args.batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    except ValueError:
        p.error(f"argument --batch-sizes: must be comma-separated integers, got {args.batch_sizes!r}")
    for name in ("prompts", "prompt_words", "repeats", "max_new_tokens", "min_pairs"):
        if getattr(args, name) < 1:
            p.error(f"argument --{name.replace('_', '-')}: must be an integer >= 1")
    if args.warmup < 0 or min(args.batch_sizes) < 1:
        p.error("argument --warmup must be >= 0 and every batch size >= 1")
    if args.device not in ("cpu", "cuda") and not args.device.startswith("cuda:"):
        p.error(f"argument --device: must be cpu, cuda or cuda:N, got {args.device!r}")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        p.error("argument --device: no CUDA device here (use --device cpu)")
    if args.device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton
        # One thread: on a shared CPU a second one spin-waits for a busy core and makes a
        # forward many times slower (recorded in the JSON as "threads").
        torch.set_num_threads(1)
    return args


def prompts(n: int, words: int, tokenizer) -> np.ndarray:
    """(n, 1 + words) ids: the first `words` words of n held-out grammar sentences."""
    from minigpt_np.corpus import make_corpus

    sentences = make_corpus(0, n, seed=2026).val_sentences
    return np.stack([tokenizer.encode(s[:words]) for s in sentences])


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def decode_generate(lm, idx: np.ndarray, stop_id: int, max_new: int) -> tuple[int, list]:
    from minigpt_np.sample import continue_batch

    new = continue_batch(lm, idx, stop_id, max_new_tokens=max_new, greedy=True)
    return sum(len(row) for row in new), new


@torch.no_grad()
def decode_device(model, idx: torch.Tensor, max_new: int) -> tuple[int, torch.Tensor]:
    for _ in range(max_new):
        probs = model(idx[:, -model.config.block_size :])[:, -1]
        idx = torch.cat([idx, probs.argmax(-1, keepdim=True)], dim=1)
    return idx.shape[0] * max_new, idx


def measure(args) -> dict:
    from minigpt_torch.adapter import TorchLM
    from minigpt_torch.weights import load

    device = torch.device(args.device)
    model, tokenizer, _ = load()
    model = model.to(device).eval()
    lms = {"generate": TorchLM(model), "generate_eager": TorchLM(model, cuda_graphs=False)}
    stop_id = tokenizer.ids["."]
    all_prompts = prompts(args.prompts, args.prompt_words, tokenizer)
    max_new = min(args.max_new_tokens, model.config.block_size - all_prompts.shape[1])

    results = []
    loops = ("generate", "generate_eager", "device") if device.type == "cuda" else ("generate", "device")
    for loop in loops:
        for batch in args.batch_sizes:
            batches = [all_prompts[i : i + batch] for i in range(0, len(all_prompts), batch)]
            dev_batches = [torch.from_numpy(b).to(device) for b in batches]

            def decode(head: str, i: int, loop=loop, batches=batches, dev_batches=dev_batches):
                """One batch of prompts decoded with `head`: (tokens, seconds, output)."""
                model.softmax_impl = head
                sync(device)
                t0 = time.perf_counter()
                if loop != "device":
                    n, out = decode_generate(lms[loop], batches[i], stop_id, max_new)
                else:
                    n, out = decode_device(model, dev_batches[i], max_new)
                sync(device)
                return n, time.perf_counter() - t0, out

            for _ in range(args.warmup):
                for i in range(len(batches)):
                    for head in HEADS:
                        decode(head, i)
            # Each batch is decoded by both heads back to back, in alternating order: a pair
            # sees the same host speed, which drifts by more than the heads differ. At least
            # MIN_PAIRS pairs per point (more repeats where a repeat is one batch).
            repeats = max(args.repeats, -(-args.min_pairs // len(batches)))
            seconds = {h: [] for h in HEADS}
            pair_ratios, tokens, outputs = [], {}, {}
            for r in range(repeats):
                total = {h: 0.0 for h in HEADS}
                tokens, outputs = {h: 0 for h in HEADS}, {h: [] for h in HEADS}
                for i in range(len(batches)):
                    pair = {}
                    for head in HEADS if (r + i) % 2 == 0 else HEADS[::-1]:
                        n, pair[head], out = decode(head, i)
                        total[head] += pair[head]
                        tokens[head] += n
                        outputs[head].append(out)
                    pair_ratios.append(pair["torch"] / pair["triton"])  # = tokens/s ratio: same tokens
                for head in HEADS:
                    seconds[head].append(total[head])
            if loop != "device":
                same = outputs["triton"] == outputs["torch"]
            else:
                same = all(torch.equal(a, b) for a, b in zip(outputs["triton"], outputs["torch"]))
            row = {"loop": loop, "batch": batch, "prompts": len(all_prompts), "decodes_per_repeat": len(batches),
                   "repeats": repeats, "same_tokens_both_heads": bool(same)}  # fmt: skip
            for head in HEADS:
                tok_s = [tokens[head] / s for s in seconds[head]]
                row[head] = {"tokens": tokens[head], "median_tokens_per_s": statistics.median(tok_s),
                             "tokens_per_s": tok_s, "seconds": seconds[head]}  # fmt: skip
            row["triton_over_torch"] = (
                row["triton"]["median_tokens_per_s"] / row["torch"]["median_tokens_per_s"]
            )
            quartiles = statistics.quantiles(pair_ratios, n=4) if len(pair_ratios) > 1 else pair_ratios * 3
            row["paired_triton_over_torch"] = statistics.median(pair_ratios)
            row["paired_quartiles"] = [quartiles[0], quartiles[2]]
            row["pairs"] = len(pair_ratios)
            results.append(row)
            print(f"{loop:8s} batch {batch:3d}: triton {row['triton']['median_tokens_per_s']:10.1f} tok/s, "
                  f"torch {row['torch']['median_tokens_per_s']:10.1f} tok/s, ratio {row['triton_over_torch']:.3f} "
                  f"(paired {row['paired_triton_over_torch']:.3f}, quartiles {row['paired_quartiles'][0]:.3f}-{row['paired_quartiles'][1]:.3f}), "
                  f"same tokens {same}", file=sys.stderr)  # fmt: skip
    heads = [head_call_us(model, batch, all_prompts.shape[1], max_new, device, args.repeats)
             for batch in args.batch_sizes]  # fmt: skip
    graph_steps = [graph_step_device_us(model, batch, args.repeats) for batch in args.batch_sizes
                   if device.type == "cuda"]  # fmt: skip
    in_decode = [head_in_decode_us(model, all_prompts[:batch], max_new, device, args.repeats)
                 for batch in args.batch_sizes]  # fmt: skip
    return {"results": results, "head_alone": heads, "head_in_decode": in_decode, "graph_step": graph_steps,
            "max_new_tokens": max_new, "prompt_tokens": int(all_prompts.shape[1])}  # fmt: skip


def graph_step_device_us(model, batch: int, repeats: int) -> dict:
    """The decoding step `generate` replays on CUDA (adapter.GraphedStep) alone: 200 replays back
    to back a round, synchronized at the end (labtools.bench.time_calls_taking_turns), the heads
    in turns. A replay costs the host a few microseconds against hundreds on the GPU, so this is
    the step's device time, and the paired ratio the LM-head softmax's effect on it."""
    from labtools import bench
    from minigpt_torch.adapter import GraphedStep

    before = model.softmax_impl
    steps = {}
    for head in HEADS:
        model.softmax_impl = head
        steps[head] = GraphedStep(model, batch)
    model.softmax_impl = before
    rounds = max(4 * repeats, 40)
    times = bench.time_calls_taking_turns(
        {head: steps[head].graph.replay for head in HEADS},
        calls=200,
        rounds=rounds,
        synchronize=torch.cuda.synchronize,
        warmup=2,
    )
    row = {"batch": batch, "rounds": rounds, "replays_per_round": 200}
    for head in HEADS:
        row[head] = {"median_us_per_step": statistics.median(times[head]), "us_per_step": times[head]}
    row["paired_triton_over_torch"] = bench.paired_ratio(times, "triton", "torch")
    print(f"graph step batch {batch:3d}: triton {row['triton']['median_us_per_step']:.2f} us, "
          f"torch {row['torch']['median_us_per_step']:.2f} us of device time a step "
          f"(paired {row['paired_triton_over_torch']:.4f})", file=sys.stderr)  # fmt: skip
    return row


def head_call_us(model, batch: int, prompt: int, max_new: int, device, repeats: int) -> dict:
    """The LM-head softmax alone, per call, on the (batch, T, V) logits a decode passes it
    (T = prompt .. prompt + max_new - 1, in order, as a decode does), the heads taking turns
    in rounds of 200 sweeps: how much of a decoding step each head costs. Each head is called
    as the model's forward calls it (the Triton one over the logits, in place);
    "triton_out_of_place" is kernels_triton.softmax, which allocates its output, for comparison."""
    from labtools import bench
    from minigpt_torch.model import lm_head_softmax

    vocab = model.config.vocab_size
    logits = [torch.randn(batch, t, vocab, device=device) for t in range(prompt, prompt + max_new)]
    variants = {head: (head, True) for head in HEADS} | {"triton_out_of_place": ("triton", False)}

    def sweep(head: str, overwrite: bool):
        def run():
            for x in logits:  # in place, x holds probabilities after the first sweep: the time is the same
                lm_head_softmax(x, head, overwrite=overwrite)

        return run

    sweeps = bench.time_calls_taking_turns(
        {name: sweep(*how) for name, how in variants.items()},
        calls=200 if device.type == "cuda" else 2,
        rounds=max(repeats, 3),
        synchronize=lambda: sync(device),
        warmup=1,  # a sweep plans every shape
    )
    per_call = {name: [us / len(logits) for us in sweeps[name]] for name in variants}
    row = {"batch": batch, "shapes": f"({batch}, {prompt}..{prompt + max_new - 1}, {vocab})"}
    for name in variants:
        row[name] = {"median_us_per_call": statistics.median(per_call[name]), "us_per_call": per_call[name]}
    row["paired_triton_over_torch"] = bench.paired_ratio(sweeps, "triton", "torch")
    row["paired_triton_out_of_place_over_torch"] = bench.paired_ratio(sweeps, "triton_out_of_place", "torch")
    print(f"head alone batch {batch:3d}: triton {row['triton']['median_us_per_call']:.2f} us "
          f"(out of place {row['triton_out_of_place']['median_us_per_call']:.2f}), "
          f"torch {row['torch']['median_us_per_call']:.2f} us, paired ratio {row['paired_triton_over_torch']:.3f}",
          file=sys.stderr)  # fmt: skip
    return row


@torch.no_grad()
def head_in_decode_us(model, prompt_ids: np.ndarray, max_new: int, device, repeats: int) -> dict:
    """A greedy decode as `generate` runs it, each step split into host time: the model up to
    the logits, the LM-head softmax (as the forward calls it), and the wait for the next-token
    probabilities at `.cpu()`. The heads take turns decode by decode, in alternating order. The
    head here runs after the rest of the forward, with the caches holding that other work, as in
    real use: what `head_alone`'s back-to-back calls cannot show."""
    from labtools import bench
    from minigpt_torch.model import lm_head_softmax

    parts = ("rest", "head", "wait")
    times = {head: {part: [] for part in parts} for head in HEADS}

    def decode(head: str) -> dict:
        idx = torch.from_numpy(prompt_ids).to(device)
        spent = dict.fromkeys(parts, 0.0)
        for _ in range(max_new):
            t0 = time.perf_counter()
            logits = model.logits(idx[:, -model.config.block_size :])
            t1 = time.perf_counter()
            probs = lm_head_softmax(logits, head, overwrite=True)[:, -1]
            t2 = time.perf_counter()
            nxt = probs.cpu().argmax(-1, keepdim=True)
            t3 = time.perf_counter()
            for part, seconds in zip(parts, (t1 - t0, t2 - t1, t3 - t2), strict=True):
                spent[part] += seconds
            idx = torch.cat([idx, nxt.to(device)], dim=1)
        return {part: v / max_new * 1e6 for part, v in spent.items()}

    decodes = max(4 * repeats, 40) if device.type == "cuda" else 2
    for r in range(decodes + 2):  # two untimed rounds: every shape planned
        for head in HEADS if r % 2 == 0 else HEADS[::-1]:
            us = decode(head)
            if r >= 2:
                for part in parts:
                    times[head][part].append(us[part])
    row = {"batch": len(prompt_ids), "steps": max_new, "decodes": decodes}
    for head in HEADS:
        row[head] = {f"median_{part}_us": statistics.median(times[head][part]) for part in parts}
    for part in ("head", "step"):
        per = {head: times[head][part] if part != "step" else [sum(v) for v in zip(*times[head].values())]
               for head in HEADS}  # fmt: skip
        row[f"paired_{part}_triton_over_torch"] = bench.paired_ratio(per, "triton", "torch")
    print(f"head in decode batch {row['batch']:3d}: triton {row['triton']['median_head_us']:.2f} us, "
          f"torch {row['torch']['median_head_us']:.2f} us a step (paired {row['paired_head_triton_over_torch']:.3f}); "
          f"whole step paired {row['paired_step_triton_over_torch']:.3f}", file=sys.stderr)  # fmt: skip
    return row


def environment(device: torch.device) -> dict:
    import triton

    env = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": shlex.join([os.path.relpath(sys.argv[0]) if sys.argv[0] else "python", *sys.argv[1:]]),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "numpy": np.__version__,
        "device": str(device),
        "triton_interpreter": os.environ.get("TRITON_INTERPRET") == "1",
        "host": platform.node(),
    }
    if device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
        env["cuda"] = torch.version.cuda
    else:
        env["cpu"] = platform.processor() or platform.machine()
        env["threads"] = torch.get_num_threads()
    return env


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = {**environment(torch.device(args.device)), "settings": {
        k: v for k, v in vars(args).items() if k not in ("out",)}}  # fmt: skip
    report |= measure(args)
    from labtools.atomic import write_report

    write_report(json.dumps(report, indent=2, allow_nan=False) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
