"""Killing `minigpt-np train` while it writes its checkpoint over an existing one never
leaves a damaged file: after every kill the path loads whole, as the old checkpoint or the
new one.

The real CLI runs in a child process. The test watches the output folder and, as soon as
the write has begun (a temporary file appears beside the checkpoint, or the checkpoint
itself changes), sends the signal after a random delay up to the write's own length; some
kills land at a random moment of the whole run instead, once Python has started. SIGINT and SIGTERM must also leave
no temporary file behind; SIGKILL, which no handler sees, may leave one (never the
checkpoint itself damaged)."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from minigpt_np import checkpoint

KILLS = int(os.environ.get("MINIGPT_KILL_TEST_KILLS", "18"))
TINY = ["--steps", "1", "--batch-size", "2", "--block-size", "8", "--n-train-sentences", "100",
        "--n-val-sentences", "10", "--eval-every", "1"]  # fmt: skip
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGKILL)


def train_cmd(out: Path, seed: int) -> list[str]:
    # "started" once the interpreter is up: a signal during Python's own start-up (its site
    # import) is a fatal error of Python's, exit 1, before any of the CLI runs
    code = "import sys; from minigpt_np.cli import main; print('started', file=sys.stderr, flush=True); sys.exit(main())"
    return [sys.executable, "-c", code, "train", "--out", str(out), "--seed", str(seed), *TINY]


def run_to_end(out: Path, seed: int) -> dict[str, np.ndarray]:
    subprocess.run(train_cmd(out, seed), check=True, capture_output=True, timeout=120)
    return checkpoint.load(out).model.params


def temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def stat_key(path: Path):
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def kill_during_write(out: Path, seed: int, sig: int, rng: random.Random, whole_run_s: float) -> int:
    """Start a training run over `out`, send `sig` (see the module docstring), return its
    exit status."""
    before = stat_key(out)
    proc = subprocess.Popen(
        train_cmd(out, seed), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        if rng.random() < 0.25:  # anywhere in the run, once it has started
            proc.stderr.readline()
            time.sleep(rng.uniform(0.0, whole_run_s))
        else:  # inside the write
            while proc.poll() is None and not temporaries(out.parent) and stat_key(out) == before:
                time.sleep(0.0002)
            time.sleep(rng.uniform(0.0, 0.08))
        if proc.poll() is None:
            proc.send_signal(sig)
        return proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_killed_write_leaves_old_or_new_checkpoint(tmp_path):
    out = tmp_path / "model.npz"
    t0 = time.perf_counter()
    new = run_to_end(out, seed=2)
    whole_run_s = time.perf_counter() - t0
    old = run_to_end(out, seed=1)
    versions = {1: old, 2: new}
    rng = random.Random()
    seen = {"old": 0, "new": 0}
    for i in range(KILLS):
        sig = SIGNALS[i % len(SIGNALS)]
        status = kill_during_write(
            out, seed=2 if i % 2 == 0 else 1, sig=sig, rng=rng, whole_run_s=whole_run_s
        )
        ckpt = checkpoint.load(out)  # raises CheckpointError if the file is damaged
        seed = ckpt.meta["seed"]
        for name, a in versions[seed].items():
            np.testing.assert_array_equal(ckpt.model.params[name], a, err_msg=f"kill {i} ({sig!r}): {name}")
        seen["new" if seed == (2 if i % 2 == 0 else 1) else "old"] += 1
        if sig != signal.SIGKILL:
            assert status in (0, 128 + sig, -sig), (i, sig, status)
            assert not temporaries(tmp_path), (i, sig, status)
        for stray in temporaries(tmp_path):
            stray.unlink()
    # Both outcomes happened: the kills did land before the rename as well as after it.
    assert seen["old"] > 0 and seen["new"] > 0, seen
