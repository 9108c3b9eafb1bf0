"""minigpt-np's command line: bad arguments are one line naming the argument and its
range, exit 2, before any work; JSON output is strict JSON; progress lines carry step,
loss, elapsed time and ETA."""

import argparse
import io
import json
import math
import os
import subprocess
import sys
import time

import pytest
from minigpt_np import checkpoint
from minigpt_np.cli import build_parser, main
from minigpt_np.train import Progress

TINY = ["--steps", "2", "--batch-size", "2", "--block-size", "8", "--n-train-sentences", "100",
        "--n-val-sentences", "10", "--eval-every", "1"]  # fmt: skip


def exit_code(argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own errors
        return exc.code


@pytest.mark.parametrize("argv, named", [
    (["train", "--out", "X", "--lr", "nan"], "argument --lr: must be a finite number > 0"),
    (["train", "--out", "X", "--lr", "-1"], "argument --lr"),
    (["train", "--out", "X", "--lr", "inf"], "argument --lr"),
    (["train", "--out", "X", "--steps", "-5"], "argument --steps: must be an integer >= 1"),
    (["train", "--out", "X", "--steps", "0"], "argument --steps"),
    (["train", "--out", "X", "--eval-every", "0"], "argument --eval-every: must be an integer >= 1"),
    (["train", "--out", "X", "--batch-size", "1.5"], "argument --batch-size"),
    (["train", "--out", "X", "--beta2", "1"], "argument --beta2: must be a finite number in [0, 1)"),
    (["train", "--out", "X", "--grad-clip", "nan"], "argument --grad-clip"),
    (["train", "--out", "X", "--seed", "-1"], "argument --seed"),
    (["train", "--out", "X", "--dtype", "float16"], "argument --dtype"),
    (["generate", "Yesterday I", "--sample", "--temperature", "nan"], "argument --temperature: must be a finite number >= 0.01"),
    (["generate", "Yesterday I", "--sample", "--temperature", "1e-30"], "greedy"),
    (["generate", "Yesterday I", "--sample", "--temperature", "-1"], "argument --temperature"),
    (["generate", "Yesterday I", "-n", "0"], "argument -n/--num-samples"),
    (["generate", "Yesterday I", "--seed", "-3"], "argument --seed"),
    (["topk", "Yesterday I", "-k", "0"], "argument -k: must be an integer >= 1"),
    (["topk", "Yesterday I", "-k", "617"], "argument -k: must be an integer in [1, 616]"),
    (["topk", "Yesterday Iz"], "unknown word(s) ['Iz']"),
])  # fmt: skip
def test_bad_arguments_are_one_line_and_exit_2(argv, named, capsys):
    assert exit_code(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], captured.err
    assert "Traceback" not in captured.err


@pytest.mark.parametrize(
    "out_of", ["missing folder", "a file's child", "a folder", "a symlink", "read-only folder"]
)
def test_unwritable_out_is_refused_before_training(out_of, tmp_path, capsys):
    """--steps 10**9 would take days: the check must come first."""
    if out_of == "missing folder":
        out = tmp_path / "no" / "such" / "m.npz"
    elif out_of == "a file's child":
        (tmp_path / "f").write_text("")
        out = tmp_path / "f" / "m.npz"
    elif out_of == "a folder":
        out = tmp_path
    elif out_of == "a symlink":
        out = tmp_path / "link.npz"
        out.symlink_to(tmp_path / "elsewhere.npz")
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only folders")
        folder = tmp_path / "ro"
        folder.mkdir(mode=0o500)
        out = folder / "m.npz"
    t0 = time.perf_counter()
    assert exit_code(["train", "--out", str(out), "--steps", str(10**9)]) == 2
    assert time.perf_counter() - t0 < 5
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "argument --out" in err[0], err


def test_diverging_training_writes_nothing_and_says_so(tmp_path, capsys):
    out = tmp_path / "m.npz"
    argv = ["train", "--out", str(out), *TINY]
    assert main(argv) == 0
    before = out.read_bytes()
    capsys.readouterr()
    steps = ["--steps", "30", "--warmup-steps", "1", "--lr", "1000"]
    assert exit_code(["train", "--out", str(out), *TINY[2:], *steps]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "diverged" in err[0] and "--lr" in err[0], err
    assert out.read_bytes() == before


def test_debug_shows_the_traceback():
    for extra_env, flag in (({}, ["--debug"]), ({"MINIGPT_DEBUG": "1"}, [])):
        run = subprocess.run([sys.executable, "-m", "minigpt_np.cli", "topk", "Yesterday Iz", *flag],
                             capture_output=True, text=True, env={**os.environ, **extra_env})  # fmt: skip
        assert run.returncode != 0 and "Traceback" in run.stderr and "unknown word" in run.stderr
    run = subprocess.run([sys.executable, "-m", "minigpt_np.cli", "topk", "Yesterday Iz"],
                         capture_output=True, text=True, env={**os.environ, "MINIGPT_DEBUG": ""})  # fmt: skip
    assert run.returncode == 2 and "Traceback" not in run.stderr


def subcommands(parser) -> dict:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_every_option_has_help():
    parser = build_parser()
    commands = subcommands(parser)
    assert set(commands) == {"train", "generate", "topk", "evaluate"}
    for name, sub in [("minigpt-np", parser), *commands.items()]:
        for action in sub._actions:
            if not isinstance(action, argparse._SubParsersAction):
                assert action.help, (name, action.option_strings or action.dest)


def test_json_output_is_strict_and_train_output_loads(tmp_path, capsys):
    out = tmp_path / "m.npz"
    assert main(["train", "--out", str(out), *TINY]) == 0
    printed = capsys.readouterr().out
    meta = json.loads(printed, parse_constant=lambda c: pytest.fail(f"bare {c} in JSON output"))
    assert meta["out"] == str(out) and math.isfinite(meta["val_loss"])
    assert checkpoint.load(out).meta["steps"] == 2


def test_finite_json_replaces_non_finite_floats():
    value = {"a": float("nan"), "b": [1.0, float("inf"), {"c": -float("inf")}], "d": "nan"}
    assert checkpoint.finite_json(value) == {"a": None, "b": [1.0, None, {"c": None}], "d": "nan"}


def test_sampling_at_the_temperature_floor_and_far_above_stays_meaningful(capsys):
    from minigpt_np.lexicon import PAST_SIMPLE

    assert main(["generate", "Yesterday I", "--sample", "--temperature", "0.01", "-n", "3"]) == 0
    for line in capsys.readouterr().out.splitlines():
        assert line.split()[2] in PAST_SIMPLE, line  # never <bos> <bos> ...
    assert main(["generate", "Yesterday I", "--sample", "--temperature", "1e6", "--seed", "1"]) == 0
    assert capsys.readouterr().out.startswith("Yesterday I ")  # near-uniform: any words


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_progress_lines_when_not_a_terminal():
    out, clock = io.StringIO(), FakeClock()
    bar = Progress(1000, out, interval=5.0, clock=clock)
    for step in range(1000):
        clock.now = step * 0.01  # 10 s in all: lines at steps 1, ~500 and 1000
        bar.update(step, f"| loss {step:.3f}")
    lines = out.getvalue().splitlines()
    assert len(lines) == 3, lines
    assert lines[0].startswith("[") and " 1/1000 " in lines[0] and "| loss 0.000" in lines[0]
    assert "0:05 elapsed, ETA 0:05" in lines[1]
    assert " 1000/1000 " in lines[2] and "ETA 0:00" in lines[2]


def test_a_cleanup_error_raised_while_a_signal_unwinds_still_exits_as_the_signal(capsys):
    """A zip writer stopped by SIGINT halfway through a member raises ValueError from its
    __exit__; the run was still interrupted: exit 130, not a user error's 2."""
    import argparse

    from minigpt_np import cli

    def stopped_mid_write(args):
        try:
            raise KeyboardInterrupt
        finally:
            raise ValueError("Can't close the ZIP file while there is an open writing handle on it")

    parser = argparse.ArgumentParser(prog="minigpt-np")
    parser.set_defaults(fn=stopped_mid_write, debug=False)
    assert cli.run(parser, []) == 130
    assert capsys.readouterr().err.strip() == "minigpt-np: interrupted"


@pytest.mark.parametrize("when", ["as the handler goes in", "as the handler comes out"])
def test_a_sigterm_while_its_handler_is_swapped_still_exits_143(monkeypatch, capsys, when):
    """A SIGTERM that lands as run() installs or restores its handler (the command itself done,
    or not yet begun) is reported as any other: "terminated", exit 128 + 15, and the handler
    that was there before is back (the kill test met the restore's window as an exit status of 1)."""
    import signal

    from minigpt_np import cli

    real_signal, calls = signal.signal, []

    def signal_raising_once(signum, handler):
        calls.append(handler)
        first_swap = len(calls) == (1 if when == "as the handler goes in" else 2)
        result = real_signal(signum, handler)
        if first_swap and signum == signal.SIGTERM:
            cli._raise_terminated(signum, None)  # the Python-level handler, run at this bytecode
        return result

    before = signal.getsignal(signal.SIGTERM)
    parser = argparse.ArgumentParser(prog="minigpt-np")
    parser.set_defaults(fn=lambda args: 0)
    monkeypatch.setattr(cli.signal, "signal", signal_raising_once)
    assert cli.run(parser, []) == 128 + signal.SIGTERM
    assert capsys.readouterr().err.strip() == "minigpt-np: terminated"
    assert signal.getsignal(signal.SIGTERM) == before
