"""`minigpt-torch`: the PyTorch port's command line, with minigpt-np's flags plus --device,
--lm-head-softmax and (train) --loss.

    minigpt-torch generate "Yesterday I" [--sample --seed S ...] [--device cuda]
    minigpt-torch topk "Yesterday I" -k 5 [--json] [--device cuda] [--lm-head-softmax torch]
    minigpt-torch evaluate [--checkpoint PATH] [--device cuda]
    minigpt-torch train --out model.npz [--device cuda] [--loss torch] [--steps N ...]
    torchrun --nproc-per-node 2 -m minigpt_torch.cli train --out model.npz   # DDP

Checkpoints are minigpt-np's .npz format both ways. Bad arguments are one line, exit 2
(--debug or MINIGPT_DEBUG=1 for the traceback).

torch is imported by the commands that run, not by building the parser: `--help` and a
bad flag answer at once (importing torch takes seconds).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from minigpt_np import checkpoint
from minigpt_np.cli import (
    add_debug_flag,
    check_output_path,
    command_line,
    dumps,
    run,
    run_metadata,
    train_config_from,
)
from minigpt_np.corpus import make_corpus
from minigpt_np.evaluate import quality
from minigpt_np.train import TrainConfig

if TYPE_CHECKING:
    from minigpt_torch.adapter import TorchLM

DEVICE_HELP = "cpu, cuda or cuda:N (default cpu)"
SOFTMAX_HELP = (
    "the LM head's softmax: triton (kernels_triton.softmax; on the CPU only under TRITON_INTERPRET=1) "
    "or torch (F.softmax); default: triton on CUDA when kernels_triton is installed, torch otherwise"
)


LOSS_HELP = (
    "the training loss: fused (kernels_triton.cross_entropy, loss and gradient in one pass; on the CPU only "
    "under TRITON_INTERPRET=1) or torch (F.cross_entropy); default: fused on CUDA when kernels_triton is "
    "installed, torch otherwise. The run reports tokens/s (the training steps after the first, which "
    "compiles, validation excluded) and peak memory (CUDA) for the loss used"
)


def device_arg(text: str) -> str:
    """argparse type for --device: a device this machine has."""
    if text == "cpu":  # the default, checked on every parse: no torch import for it
        return text
    import torch

    try:
        device = torch.device(text)
    except (RuntimeError, ValueError):
        device = None
    if device is None or device.type not in ("cpu", "cuda"):
        raise argparse.ArgumentTypeError(f"must be cpu, cuda or cuda:N, got {text!r}")
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise argparse.ArgumentTypeError(
                f"{text!r} asked for, but this machine has no CUDA device (torch {torch.__version__}, "
                f"torch.cuda.is_available() is False); use --device cpu"
            )
        if device.index is not None and device.index >= count:
            raise argparse.ArgumentTypeError(
                f"{text!r} asked for, but this machine has {count} CUDA device(s)"
            )
    return text


def check_triton_choice(argument: str, value: str, device: str) -> None:
    """`argument` set to `value`, which runs kernels_triton, must be able to run on `device`."""
    import torch

    if torch.device(device).type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError(
            f"argument {argument}: {value} runs on the CPU only under Triton's interpreter "
            f"(TRITON_INTERPRET=1); use --device cuda or {argument} torch"
        )
    try:
        import kernels_triton  # noqa: F401
    except ImportError as exc:
        raise ValueError(
            f"argument {argument}: {value} needs kernels_triton, which is not importable ({exc})"
        ) from None


def check_softmax_choice(args) -> None:
    """--lm-head-softmax triton must be able to run where the model runs."""
    if args.lm_head_softmax == "triton":
        check_triton_choice("--lm-head-softmax", "triton", args.device)


def softmax_in_use(args) -> str:
    """What the LM head runs: the choice made, or what "auto" picks for this device."""
    import torch

    from minigpt_torch.model import triton_module

    if args.lm_head_softmax:
        return args.lm_head_softmax
    return "triton" if torch.device(args.device).type == "cuda" and triton_module() is not None else "torch"


def torch_model(args, path: str | None):
    from minigpt_torch import weights
    from minigpt_torch.adapter import TorchLM

    check_softmax_choice(args)
    model, tokenizer, meta = weights.load(path)
    model = model.to(args.device)
    model.softmax_impl = softmax_in_use(args)
    return TorchLM(model), tokenizer, meta


def load_torch(args) -> tuple[TorchLM, object]:
    lm, tokenizer, _ = torch_model(args, args.checkpoint)
    return lm, tokenizer


def check_loss_choice(args) -> None:
    """--loss fused must be able to run where training runs."""
    if args.loss == "fused":
        check_triton_choice("--loss", "fused", args.device)


def cmd_train(args) -> int:
    cfg = train_config_from(args)
    check_output_path(args.out)
    check_loss_choice(args)
    import torch
    import torch.distributed as dist

    from minigpt_torch import weights
    from minigpt_torch.train import train

    try:
        result = train(cfg, device=args.device, loss=args.loss or "auto")
        if result.rank == 0:
            np_model = weights.to_numpy(result.model)
            prog = "minigpt-torch" if result.world_size == 1 else \
                f"torchrun --nproc-per-node {result.world_size} -m minigpt_torch.cli"  # fmt: skip
            meta = run_metadata(prog, args, cfg, np_model, result.corpus, result.seconds, result.tokens_per_s)
            meta |= {"torch": torch.__version__, "device": args.device, "world_size": result.world_size}
            meta |= {"loss": result.loss_impl, "peak_memory_bytes": result.peak_memory_bytes}
            checkpoint.save(args.out, np_model, result.corpus.tokenizer, meta)
            print(dumps({"out": args.out, **meta}, indent=2))
        if dist.is_initialized():
            # Every rank waits for rank 0's checkpoint write: a rank that tears its gloo group
            # down while another still uses it can abort ("terminate called without an active
            # exception"). Only on success: after an error the other ranks may never arrive.
            dist.barrier()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    return 0


def cmd_evaluate(args) -> int:
    """minigpt-np's evaluate, computed by the torch model on --device (with its LM head)."""
    lm, _, meta = torch_model(args, args.checkpoint)
    if "train_config" not in meta:
        raise ValueError(
            "this checkpoint records no train_config, so its held-out sentences cannot be rebuilt"
        )
    cfg = TrainConfig(**meta["train_config"])
    corpus = make_corpus(cfg.n_train_sentences, cfg.n_val_sentences, cfg.seed)
    report = quality(lm, corpus, cfg.seed)
    report |= {"device": args.device, "lm_head_softmax": lm.model.softmax_impl}
    print(dumps(report, indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser, sub, commands = command_line("minigpt-torch", __doc__, cmd_train, load_torch)
    e = sub.add_parser(
        "evaluate", help="validation loss, grammaticality rate and probe top-5 of a checkpoint"
    )
    e.add_argument("--checkpoint", default=None, help="default: the checkpoint shipped in minigpt-np")
    add_debug_flag(e)
    e.set_defaults(fn=cmd_evaluate)
    for p in [*commands, e]:
        p.add_argument("--device", type=device_arg, default="cpu", help=DEVICE_HELP)
    commands[0].add_argument("--loss", choices=("fused", "torch"), default=None, help=LOSS_HELP)  # train
    for p in [*commands[1:], e]:  # generate, topk, evaluate
        p.add_argument("--lm-head-softmax", choices=("triton", "torch"), default=None, help=SOFTMAX_HELP)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
