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
import tempfile  # noqa: E402
import threading  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import fields  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from minigpt_np import checkpoint  # noqa: E402
from minigpt_np.checkpoint import finite_json  # noqa: E402
from minigpt_np.corpus import Corpus, make_corpus  # noqa: E402
from minigpt_np.evaluate import quality  # noqa: E402
from minigpt_np.limits import AT_LEAST_0, AT_LEAST_1, Range  # noqa: E402
from minigpt_np.memory import check_fits  # noqa: E402
from minigpt_np.model import MiniGPT  # noqa: E402
from minigpt_np.sample import LanguageModel, generate, topk  # noqa: E402
from minigpt_np.tokenizer import Tokenizer  # noqa: E402
from minigpt_np.train import DTYPES, TRAIN_HELP, TRAIN_LIMITS, TrainConfig, train  # noqa: E402

Loader = Callable[[argparse.Namespace], tuple[LanguageModel, Tokenizer]]

# At T = 0.01 a token 10% less likely than the most likely one keeps 3e-5 of its weight
# relative to it (0.9 ** 100): below that, sampling is greedy decoding.
MIN_TEMPERATURE = 0.01
TEMPERATURE = Range(float, MIN_TEMPERATURE, why="lower is greedy decoding: leave out --sample for that")
NUM_SAMPLES = Range(int, 1, 10_000)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: "<prog>: error: argument --lr: must be ...", exit 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def debug_requested(args: argparse.Namespace | None = None) -> bool:
    return bool(getattr(args, "debug", False)) or os.environ.get("MINIGPT_DEBUG", "") not in ("", "0")


def add_debug_flag(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: a subcommand's absent flag must not overwrite the main parser's.
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the Python traceback of an error (also MINIGPT_DEBUG=1)")  # fmt: skip


# --- pieces shared with minigpt-torch ------------------------------------------------


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """--out and one flag per TrainConfig field (--steps, --batch-size, ...)."""
    parser.add_argument("--out", required=True,
                        help="checkpoint path (.npz); its folder must exist and be writable")  # fmt: skip
    defaults = TrainConfig()
    for f in fields(TrainConfig):
        default = getattr(defaults, f.name)
        flag = "--" + f.name.replace("_", "-")
        if f.name == "dtype":
            parser.add_argument(flag, dest=f.name, choices=DTYPES, default=default,
                                help=f"{TRAIN_HELP[f.name]}; default {default}")  # fmt: skip
            continue
        limits = TRAIN_LIMITS[f.name]
        parser.add_argument(flag, dest=f.name, type=limits.argtype(), default=default,
                            help=f"{TRAIN_HELP[f.name]}: {limits.describe()}; default {default}")  # fmt: skip


def train_config_from(args: argparse.Namespace) -> TrainConfig:
    return TrainConfig(**{f.name: getattr(args, f.name) for f in fields(TrainConfig)})


def check_output_path(path: str) -> None:
    """Before any training: `path` can be written as a checkpoint (its folder exists and
    takes a new file, it is not a folder or a symbolic link). ValueError names --out."""
    p = Path(path)
    folder = p.parent
    if p.is_symlink():
        raise ValueError(f"argument --out: {path} is a symbolic link; give the path it points to")
    if p.is_dir():
        raise ValueError(f"argument --out: {path} is a folder; give a file path")
    if not folder.is_dir():
        raise ValueError(f"argument --out: folder {str(folder)!r} does not exist")
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{p.name}.", suffix=".tmp")
    except OSError as exc:
        raise ValueError(f"argument --out: cannot write in {str(folder)!r} ({exc.strerror})") from None
    os.close(fd)
    os.unlink(probe)


def dumps(value, **kwargs) -> str:
    return json.dumps(finite_json(value), allow_nan=False, **kwargs)


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
    g.add_argument("--temperature", type=TEMPERATURE.argtype(), default=1.0,
                   help=f"sampling temperature (with --sample): {TEMPERATURE.describe()}; default 1.0")  # fmt: skip
    g.add_argument("--seed", type=AT_LEAST_0.argtype(), default=0,
                   help=f"sampling seed, sample i uses seed + i: {AT_LEAST_0.describe()}; default 0")  # fmt: skip
    g.add_argument("-n", "--num-samples", type=NUM_SAMPLES.argtype(), default=1,
                   help=f"how many continuations: {NUM_SAMPLES.describe()}; default 1")  # fmt: skip
    g.set_defaults(fn=cmd_generate, load=load)
    t = sub.add_parser("topk", help="the k most likely next words after a prompt")
    t.add_argument("-k", type=AT_LEAST_1.argtype(), default=5,
                   help="how many words: an integer from 1 to the vocabulary size; default 5")  # fmt: skip
    t.add_argument("--json", action="store_true", help='print [{"token", "prob"}, ...]')
    t.set_defaults(fn=cmd_topk, load=load)
    for p in (g, t):
        p.add_argument("prompt", help='words of the grammar\'s vocabulary, e.g. "Yesterday I"')
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
    if args.k > len(tokenizer):
        raise ValueError(
            f"argument -k: must be an integer in [1, {len(tokenizer)}] (the vocabulary size), got {args.k}"
        )
    top = topk(model, tokenizer, args.prompt, args.k)
    if args.json:
        print(dumps([{"token": t, "prob": p} for t, p in top]))
    else:
        for t, p in top:
            print(f"{p:8.4f}  {t}")
    return 0


def command_line(prog: str, doc: str, cmd_train: Callable, load: Loader):
    """The parser with `train`, `generate` and `topk`: (parser, its subparsers, those three)."""
    parser = Parser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_debug_flag(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train on the grammar corpus and write a checkpoint")
    add_train_arguments(t)
    t.set_defaults(fn=cmd_train)
    commands = [t, *add_query_commands(sub, load)]
    for c in commands:
        add_debug_flag(c)
    return parser, sub, commands


class Terminated(BaseException):
    """SIGTERM, raised in the main thread like KeyboardInterrupt is for SIGINT, so that
    a write in progress unwinds (its temporary file removed, the old file untouched)."""


def _raise_terminated(signum, frame):
    raise Terminated


# What a user's mistake raises (a bad flag value, prompt, checkpoint or path): one line.
USER_ERRORS = (ValueError, OSError)


def _interrupted_by(exc: BaseException) -> tuple[str, int] | None:
    """("interrupted" or "terminated", exit status) when `exc` was raised while a SIGINT or
    SIGTERM unwound the stack (e.g. a zip writer that cannot close a half-written member
    raises ValueError from its __exit__): the run was still stopped by the signal."""
    seen = exc.__context__
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            return "interrupted", 128 + signal.SIGINT
        if isinstance(seen, Terminated):
            return "terminated", 128 + signal.SIGTERM
        seen = seen.__context__
    return None


def run(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    """Parse and dispatch. A user's mistake is one line on stderr and exit 2; with --debug
    (or MINIGPT_DEBUG=1) the exception propagates with its traceback. In the main thread a
    SIGTERM raises Terminated (see there) from the moment its handler is in until it is out."""
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    args.argv = argv
    if threading.current_thread() is not threading.main_thread():
        return _dispatch(parser, args)
    previous = signal.getsignal(signal.SIGTERM)
    previous = signal.SIG_DFL if previous is None else previous  # a handler not set from Python
    try:  # a SIGTERM as the handler goes in or out, past the command's own handling
        try:
            signal.signal(signal.SIGTERM, _raise_terminated)
            return _dispatch(parser, args)
        finally:
            signal.signal(signal.SIGTERM, previous)
    except Terminated:
        signal.signal(signal.SIGTERM, previous)
        print(f"{parser.prog}: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM


def _dispatch(parser: argparse.ArgumentParser, args) -> int:
    try:
        return args.fn(args)
    except USER_ERRORS as exc:
        if debug_requested(args):
            raise
        signalled = _interrupted_by(exc)
        if signalled is not None:  # a writer's cleanup failed while a signal unwound it
            print(f"{parser.prog}: {signalled[0]}", file=sys.stderr)
            return signalled[1]
        text = " ".join(str(exc).split()) or type(exc).__name__
        print(f"{parser.prog}: error: {text}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if debug_requested(args):
            raise
        print(f"{parser.prog}: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except Terminated:
        print(f"{parser.prog}: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM


# --- minigpt-np ----------------------------------------------------------------------


def load_numpy(args) -> tuple[MiniGPT, Tokenizer]:
    ckpt = checkpoint.load(args.checkpoint)
    return ckpt.model, ckpt.tokenizer


def cmd_train(args) -> int:
    cfg = train_config_from(args)
    check_fits(cfg.batch_size, cfg.block_size, cfg.dtype)  # before the corpus takes its seconds
    check_output_path(args.out)
    result = train(cfg)
    meta = run_metadata(
        "minigpt-np", args, cfg, result.model, result.corpus, result.seconds, result.tokens_per_s
    )
    checkpoint.save(args.out, result.model, result.corpus.tokenizer, meta)
    print(dumps({"out": args.out, **meta}, indent=2))
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
    print(dumps(quality(ckpt.model, corpus, cfg.seed), indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser, sub, _ = command_line("minigpt-np", __doc__, cmd_train, load_numpy)
    e = sub.add_parser(
        "evaluate", help="validation loss, grammaticality rate and probe top-5 of a checkpoint"
    )
    e.add_argument("--checkpoint", default=None, help="default: the checkpoint shipped in the package")
    add_debug_flag(e)
    e.set_defaults(fn=cmd_evaluate)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
