"""minigpt_np's public API from the package itself, and training sizes refused before any
work when they cannot fit in memory (issue 44)."""

import subprocess
import sys
import time

import numpy as np
import pytest
from minigpt_np import memory


def test_the_package_exports_its_public_functions():
    import minigpt_np
    from minigpt_np import checkpoint, sample, train

    assert minigpt_np.load is checkpoint.load and minigpt_np.save is checkpoint.save
    assert minigpt_np.generate is sample.generate and minigpt_np.topk is sample.topk
    assert minigpt_np.train_model is train.train and minigpt_np.TrainConfig is train.TrainConfig
    assert set(minigpt_np.__all__) <= set(dir(minigpt_np))
    for name in minigpt_np.__all__:
        assert getattr(minigpt_np, name) is not None
    with pytest.raises(AttributeError):
        minigpt_np.no_such_name  # noqa: B018


def test_the_api_round_trips_a_checkpoint(tmp_path):
    import minigpt_np

    ckpt = minigpt_np.load()
    minigpt_np.save(tmp_path / "m.npz", ckpt.model, ckpt.tokenizer, {"note": "copy"})
    again = minigpt_np.load(tmp_path / "m.npz")
    prompt = "Yesterday I"
    assert minigpt_np.generate(again.model, again.tokenizer, prompt) == minigpt_np.generate(
        ckpt.model, ckpt.tokenizer, prompt
    )
    words = minigpt_np.topk(ckpt.model, ckpt.tokenizer, "Tomorrow she", k=3)
    assert words[0][0] == "will" and sum(p for _, p in words) <= 1 + 1e-6


def test_importing_the_package_loads_no_numpy():
    code = "import sys, minigpt_np; assert 'numpy' not in sys.modules, 'numpy imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_estimate_grows_with_the_square_of_the_context():
    small, double = memory.step_bytes(32, 512, 4), memory.step_bytes(32, 1024, 4)
    assert 3.5 < double / small < 4.1
    assert memory.step_bytes(32, 32, 8) == 2 * memory.step_bytes(32, 32, 4)
    # the default run is tens of megabytes, far below any machine's memory
    assert memory.step_bytes(32, 32, 4) < 100e6


def test_check_fits_compares_with_what_is_available():
    memory.check_fits(32, 32, "float32", available=10**9)
    with pytest.raises(ValueError, match=r"--batch-size 32 and --block-size 4096 .* needs about"):
        memory.check_fits(32, 4096, "float32", available=10**9)


@pytest.mark.parametrize(
    "flags", [["--block-size", "100000"], ["--batch-size", "1000000000"]], ids=["block", "batch"]
)
def test_train_refuses_sizes_beyond_memory_at_once(tmp_path, flags):
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "minigpt_np.cli", "train", "--out", str(tmp_path / "m.npz"), *flags],
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.perf_counter() - t0
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "--block-size" in lines[0] and "--batch-size" in lines[0] and "memory available" in lines[0]
    assert elapsed < 15, elapsed  # before the corpus is drawn (that alone takes ~20 s)
    assert not (tmp_path / "m.npz").exists()


def test_a_run_that_fits_is_not_refused():
    avail = memory.available_bytes()
    assert avail is None or avail > 0
    memory.check_fits(32, 32, "float32")
    memory.check_fits(64, 256, "float64")
    assert np.dtype("float64").itemsize == 8
