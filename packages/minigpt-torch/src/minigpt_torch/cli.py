"""`minigpt-torch`: the PyTorch port's command line, with minigpt-np's flags plus --device.

    minigpt-torch generate "Yesterday I" [--sample --seed S ...] [--device cuda]
    minigpt-torch topk "Yesterday I" -k 5 [--json] [--device cuda]
    minigpt-torch train --out model.npz [--device cuda] [--steps N ...]
    torchrun --nproc-per-node 2 -m minigpt_torch.cli train --out model.npz   # DDP

Checkpoints are minigpt-np's .npz format both ways.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
import torch.distributed as dist
from minigpt_np import checkpoint
from minigpt_np.cli import command_line, run, run_metadata, train_config_from

from minigpt_torch import weights
from minigpt_torch.adapter import TorchLM
from minigpt_torch.train import train


def load_torch(args) -> tuple[TorchLM, object]:
    model, tokenizer, _ = weights.load(args.checkpoint)
    return TorchLM(model.to(args.device)), tokenizer


def cmd_train(args) -> int:
    cfg = train_config_from(args)
    try:
        result = train(cfg, device=args.device)
        if result.rank == 0:
            np_model = weights.to_numpy(result.model)
            prog = "minigpt-torch" if result.world_size == 1 else \
                f"torchrun --nproc-per-node {result.world_size} -m minigpt_torch.cli"  # fmt: skip
            meta = run_metadata(prog, args, cfg, np_model, result.corpus, result.seconds, result.tokens_per_s)
            meta |= {"torch": torch.__version__, "device": args.device, "world_size": result.world_size}
            checkpoint.save(args.out, np_model, result.corpus.tokenizer, meta)
            print(json.dumps({"out": args.out, **meta}, indent=2))
        if dist.is_initialized():
            # Every rank waits for rank 0's checkpoint write: a rank that tears its gloo group
            # down while another still uses it can abort ("terminate called without an active
            # exception"). Only on success: after an error the other ranks may never arrive.
            dist.barrier()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser, _, commands = command_line("minigpt-torch", __doc__, cmd_train, load_torch)
    for p in commands:
        p.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    return parser


def main(argv: list[str] | None = None) -> int:
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
