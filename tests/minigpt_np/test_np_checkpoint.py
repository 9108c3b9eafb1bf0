"""Checkpoints: exact round trip, and a clear error for every kind of bad file."""

import json
import zipfile

import numpy as np
import pytest
from minigpt_np import checkpoint
from minigpt_np.checkpoint import CheckpointError
from minigpt_np.model import GPTConfig
from minigpt_np.tokenizer import BOS, Tokenizer
from np_helpers import SMALL, perturbed_model

TOK = Tokenizer([BOS, *(f"w{i}" for i in range(SMALL.vocab_size - 1))])


@pytest.fixture(params=[np.float32, np.float64])
def saved(request, tmp_path):
    model = perturbed_model(SMALL, int(np.random.default_rng().integers(1 << 30)), request.param)
    path = tmp_path / "m.npz"
    checkpoint.save(path, model, TOK, {"seed": 5, "steps": 7, "command": "minigpt-np train --out m.npz"})
    return path, model


def rewrite(path, change):
    """Load the raw arrays, let `change` edit the dict, save them back (uncompressed)."""
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    change(arrays)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def meta_of(arrays) -> dict:
    return json.loads(str(arrays["meta.json"]))


def edited_meta(arrays, **changes) -> np.ndarray:
    return np.array(json.dumps({**meta_of(arrays), **changes}))


def test_round_trip_is_exact(saved):
    path, model = saved
    ckpt = checkpoint.load(path)
    assert ckpt.model.config == model.config and ckpt.model.dtype == model.dtype
    assert list(ckpt.model.params) == list(model.params)
    for n, a in model.params.items():
        assert ckpt.model.params[n].dtype == a.dtype
        np.testing.assert_array_equal(ckpt.model.params[n], a)
    assert ckpt.tokenizer.vocab == TOK.vocab
    assert ckpt.meta["seed"] == 5 and ckpt.meta["command"] == "minigpt-np train --out m.npz"
    assert ckpt.meta["format_version"] == checkpoint.FORMAT_VERSION


def test_saved_file_holds_no_pickles(saved):
    path, _ = saved
    with np.load(path, allow_pickle=False) as npz:
        assert all(npz[k].dtype.kind in "fU" for k in npz.files)


@pytest.mark.parametrize("change, match", [
    (lambda a: a.pop("param/ln_f.b"), r"missing \['ln_f.b'\]"),
    (lambda a: a.update({"param/bogus": np.zeros(2, np.float32)}), r"unexpected \['bogus'\]"),
    (lambda a: a.update({"param/lm_head.w": a["param/lm_head.w"][:, :8]}), "lm_head.w is"),
    (lambda a: a.update({"param/ln_f.w": a["param/ln_f.w"].astype(np.float16)}), "ln_f.w is .* float16"),
    (lambda a: a.pop("vocab"), "missing entry 'vocab'"),
    (lambda a: a.update({"vocab": a["vocab"][:-1]}), "vocab must be"),
    (lambda a: a.update({"meta.json": np.array("{not json")}), "unreadable meta.json"),
    (lambda a: a.update({"meta.json": np.array(json.dumps({"format_version": 1}))}), "unreadable meta.json"),
    (lambda a: a.update({"meta.json": edited_meta(a, format_version=99)}), "format_version 99"),
    (lambda a: a.update({"meta.json": edited_meta(a, config={**meta_of(a)["config"], "n_embd": 8})}), "is .* expected"),
])  # fmt: skip
def test_mismatched_checkpoint_is_a_clear_error(saved, change, match):
    path, _ = saved
    rewrite(path, change)
    with pytest.raises(CheckpointError, match=match):
        checkpoint.load(path)


def test_corrupt_files_are_clear_errors(saved, tmp_path):
    path, _ = saved
    data = path.read_bytes()
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(data[: len(data) // 2])
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"\x00not a zip file at all" * 10)
    for bad in (truncated, garbage, tmp_path / "missing.npz"):
        with pytest.raises(CheckpointError, match="not a readable checkpoint"):
            checkpoint.load(bad)


def test_damaged_member_is_a_clear_error(saved, tmp_path):
    """A zip whose compressed parameter bytes were overwritten."""
    path, _ = saved
    damaged = tmp_path / "damaged.npz"
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("param/lm_head.w.npy")
    data = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename) + 64
    data[start : start + 64] = b"\xff" * 64
    damaged.write_bytes(bytes(data))
    with pytest.raises(CheckpointError):
        checkpoint.load(damaged)


def test_object_arrays_are_refused(saved):
    path, _ = saved
    rewrite(path, lambda a: a.update({"vocab": np.array(list(a["vocab"]), dtype=object)}))
    with pytest.raises(CheckpointError, match="dtype object is not a plain"):
        checkpoint.load(path)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_weights_are_refused_with_the_tensor_name(saved, value):
    path, _ = saved

    def poison(arrays):
        w = arrays["param/blocks.1.mlp.fc.w"]
        w.flat[np.random.default_rng().integers(w.size)] = value

    rewrite(path, poison)
    with pytest.raises(CheckpointError, match=r"parameter blocks\.1\.mlp\.fc\.w is not finite"):
        checkpoint.load(path)


def test_save_refuses_a_tokenizer_of_another_size(tmp_path):
    model = perturbed_model(GPTConfig(vocab_size=10, block_size=4, n_layer=1, n_head=1, n_embd=4), 0)
    with pytest.raises(ValueError, match="vocab_size"):
        checkpoint.save(tmp_path / "x.npz", model, TOK)
