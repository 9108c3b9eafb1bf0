"""`minigpt-np`: train the grammar MiniGPT, generate from it, list its top-k next words.

    minigpt-np train --out model.npz [--steps N --seed S ...]
    minigpt-np generate "Yesterday I" [--sample --seed S --temperature T -n N]
    minigpt-np topk "Yesterday I" -k 5 [--json]
    minigpt-np evaluate [--checkpoint PATH]

Without --checkpoint, generate / topk / evaluate use the checkpoint shipped in the
package. minigpt-torch builds its command line from the pieces here.
"""

from __future__ import annotations

import os

# One BLAS thread unless the caller says otherwise: this model's matrix products are
# too small to gain from a second thread, and a second thread that spin-waits for a
# busy core makes a step several times slower. Must happen before NumPy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import shlex  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import fields  # noqa: E402

import numpy as np  # noqa: E402

from minigpt_np import checkpoint  # noqa: E402
from minigpt_np.corpus import Corpus, make_corpus  # noqa: E402
from minigpt_np.evaluate import quality  # noqa: E402
from minigpt_np.model import MiniGPT  # noqa: E402
from minigpt_np.sample import LanguageModel, generate, topk  # noqa: E402
from minigpt_np.tokenizer import Tokenizer  # noqa: E402
from minigpt_np.train import TrainConfig, train  # noqa: E402

Loader = Callable[[argparse.Namespace], tuple[LanguageModel, Tokenizer]]


# --- pieces shared with minigpt-torch ------------------------------------------------


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """--out and one flag per TrainConfig field (--steps, --batch-size, ...)."""
    parser.add_argument("--out", required=True, help="checkpoint path (.npz)")
    defaults = TrainConfig()
    for f in fields(TrainConfig):
        default = getattr(defaults, f.name)
        parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=type(default), default=default,
                            help=f"default {default}")  # fmt: skip


def train_config_from(args: argparse.Namespace) -> TrainConfig:
    return TrainConfig(**{f.name: getattr(args, f.name) for f in fields(TrainConfig)})


def run_metadata(prog: str, args: argparse.Namespace, cfg: TrainConfig, model: MiniGPT, corpus: Corpus,
                 seconds: float, tokens_per_s: float) -> dict:  # fmt: skip
    """What a trained checkpoint records: how it was made and how good it is."""
    return {
        "seed": cfg.seed,
        "steps": cfg.steps,
        "command": f"{prog} " + shlex.join(args.argv),
        "train_config": cfg.to_dict(),
        "train_seconds": round(seconds, 1),
        "tokens_per_s": round(tokens_per_s),
        "created": datetime.date.today().isoformat(),
        "numpy": np.__version__,
        **quality(model, corpus, cfg.seed),
    }


def add_query_commands(sub, load: Loader) -> list[argparse.ArgumentParser]:
    """`generate` and `topk`, reading their model through `load(args)`."""
    g = sub.add_parser("generate", help="continue a prompt to the end of its sentence")
    g.add_argument("--sample", action="store_true", help="sample instead of greedy decoding")
    g.add_argument("--temperature", type=float, default=1.0)
    g.add_argument("--seed", type=int, default=0, help="sampling seed (sample i uses seed + i)")
    g.add_argument("-n", "--num-samples", type=int, default=1)
    g.set_defaults(fn=cmd_generate, load=load)
    t = sub.add_parser("topk", help="the k most likely next words after a prompt")
    t.add_argument("-k", type=int, default=5)
    t.add_argument("--json", action="store_true", help='print [{"token", "prob"}, ...]')
    t.set_defaults(fn=cmd_topk, load=load)
    for p in (g, t):
        p.add_argument("prompt")
        p.add_argument("--checkpoint", default=None, help="default: the checkpoint shipped in minigpt-np")
    return [g, t]


def cmd_generate(args) -> int:
    model, tokenizer = args.load(args)
    for i in range(args.num_samples):
        print(generate(model, tokenizer, args.prompt, greedy=not args.sample,
                       temperature=args.temperature, seed=args.seed + i))  # fmt: skip
    return 0


def cmd_topk(args) -> int:
    model, tokenizer = args.load(args)
    top = topk(model, tokenizer, args.prompt, args.k)
    if args.json:
        print(json.dumps([{"token": t, "prob": p} for t, p in top]))
    else:
        for t, p in top:
            print(f"{p:8.4f}  {t}")
    return 0


def command_line(prog: str, doc: str, cmd_train: Callable, load: Loader):
    """The parser with `train`, `generate` and `topk`: (parser, its subparsers, those three)."""
    parser = argparse.ArgumentParser(
        prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train on the grammar corpus and write a checkpoint")
    add_train_arguments(t)
    t.set_defaults(fn=cmd_train)
    return parser, sub, [t, *add_query_commands(sub, load)]


class Terminated(BaseException):
    """SIGTERM, raised in the main thread like KeyboardInterrupt is for SIGINT, so that
    a write in progress unwinds (its temporary file removed, the old file untouched)."""


def _raise_terminated(signum, frame):
    raise Terminated


def run(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    """Parse and dispatch; a bad prompt or checkpoint is one line on stderr, exit 2."""
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    args.argv = argv
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if main_thread else None
    try:
        return args.fn(args)
    except (ValueError, OSError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{parser.prog}: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except Terminated:
        print(f"{parser.prog}: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


# --- minigpt-np ----------------------------------------------------------------------


def load_numpy(args) -> tuple[MiniGPT, Tokenizer]:
    ckpt = checkpoint.load(args.checkpoint)
    return ckpt.model, ckpt.tokenizer


def cmd_train(args) -> int:
    cfg = train_config_from(args)
    result = train(cfg)
    meta = run_metadata(
        "minigpt-np", args, cfg, result.model, result.corpus, result.seconds, result.tokens_per_s
    )
    checkpoint.save(args.out, result.model, result.corpus.tokenizer, meta)
    print(json.dumps({"out": args.out, **meta}, indent=2))
    return 0


def cmd_evaluate(args) -> int:
    """Recompute a checkpoint's quality on its own held-out sentences (rebuilt from the
    training seed in its metadata)."""
    ckpt = checkpoint.load(args.checkpoint)
    if "train_config" not in ckpt.meta:
        raise ValueError(
            "this checkpoint records no train_config, so its held-out sentences cannot be rebuilt"
        )
    cfg = TrainConfig(**ckpt.meta["train_config"])
    corpus = make_corpus(cfg.n_train_sentences, cfg.n_val_sentences, cfg.seed)
    print(json.dumps(quality(ckpt.model, corpus, cfg.seed), indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser, sub, _ = command_line("minigpt-np", __doc__, cmd_train, load_numpy)
    e = sub.add_parser(
        "evaluate", help="validation loss, grammaticality rate and probe top-5 of a checkpoint"
    )
    e.add_argument("--checkpoint", default=None, help="default: the checkpoint shipped in the package")
    e.set_defaults(fn=cmd_evaluate)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
