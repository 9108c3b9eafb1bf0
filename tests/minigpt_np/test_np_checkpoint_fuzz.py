"""Hypothesis fuzz of the checkpoint loader: whatever the bytes, `checkpoint.load` either
returns the checkpoint that was saved (a change the zip format tolerates, e.g. in a
timestamp) or raises CheckpointError with a one-line message; it never raises anything
else and never crashes."""

import io
import json
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from minigpt_np import checkpoint
from minigpt_np.checkpoint import CheckpointError
from minigpt_np.tokenizer import BOS, Tokenizer
from np_helpers import SMALL, perturbed_model

TOK = Tokenizer([BOS, *(f"w{i}" for i in range(SMALL.vocab_size - 1))])
MODEL = perturbed_model(SMALL, 3, np.float32)


def saved_bytes(compressed: bool) -> bytes:
    buf = io.BytesIO()
    arrays = raw_arrays()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    return buf.getvalue()


def raw_arrays() -> dict[str, np.ndarray]:
    meta = {"format_version": checkpoint.FORMAT_VERSION, "config": SMALL.__dict__, "dtype": "float32"}
    arrays = {f"param/{n}": a.copy() for n, a in MODEL.params.items()}
    arrays["meta.json"] = np.array(json.dumps(meta))
    arrays["vocab"] = np.array(TOK.vocab)
    return arrays


GOOD = {True: saved_bytes(True), False: saved_bytes(False)}


def load_or_refuse(tmp_path_factory, data: bytes):
    """The loaded checkpoint, or None when refused with a one-line CheckpointError."""
    path = tmp_path_factory.mktemp("fuzz") / "m.npz"
    path.write_bytes(data)
    try:
        return checkpoint.load(path)
    except CheckpointError as exc:
        message = str(exc)
        assert message and "\n" not in message, message
        return None


def assert_is_the_saved_model(ckpt):
    assert ckpt.tokenizer.vocab == TOK.vocab and ckpt.model.config == SMALL
    for n, a in MODEL.params.items():
        np.testing.assert_array_equal(ckpt.model.params[n], a)


FUZZ = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@FUZZ
@given(compressed=st.booleans(), data=st.data())
def test_truncated_files_are_refused(tmp_path_factory, compressed, data):
    good = GOOD[compressed]
    cut = data.draw(st.integers(0, len(good) - 1))
    assert load_or_refuse(tmp_path_factory, good[:cut]) is None


@FUZZ
@given(compressed=st.booleans(), data=st.data())
def test_corrupted_bytes_load_whole_or_are_refused(tmp_path_factory, compressed, data):
    good = bytearray(GOOD[compressed])
    n = data.draw(st.integers(1, 16))
    for _ in range(n):
        # Half of the hits in the last 2 KB: the zip's central directory and the .npy
        # headers' positions it records.
        lo = data.draw(st.sampled_from([0, max(0, len(good) - 2048)]))
        good[data.draw(st.integers(lo, len(good) - 1))] = data.draw(st.integers(0, 255))
    ckpt = load_or_refuse(tmp_path_factory, bytes(good))
    if ckpt is not None:
        assert_is_the_saved_model(ckpt)


@FUZZ
@given(st.binary(max_size=4096))
def test_random_bytes_are_refused(tmp_path_factory, blob):
    assert load_or_refuse(tmp_path_factory, blob) is None


def zip_of(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=True)
    return buf.getvalue()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
PARAM_NAMES = sorted(MODEL.params)
OTHER_ARRAYS = {
    "f16": np.zeros(3, np.float16), "i32 2-D": np.zeros((2, 2), np.int32), "bool": np.ones(4, bool),
    "c64": np.zeros(2, np.complex64), "str": np.array(["a", "b"]), "empty": np.zeros((0,), np.float32),
    "1 MB": np.zeros((1 << 20,), np.uint8), "0-d": np.array(1.5), "object": np.array([None], dtype=object),
}  # fmt: skip
other_arrays = st.sampled_from(sorted(OTHER_ARRAYS))
RESHAPES = {"drop last column": lambda a: a[..., :-1], "add an axis": lambda a: a[None],
            "0-d": lambda a: np.zeros((), a.dtype)}  # fmt: skip
RETYPES = {"float64": np.float64, "float16": np.float16, "int32": np.int32}
META_PATHS = [("format_version",), ("dtype",), ("config",), ("config", "n_embd"), ("config", "vocab_size"),
              ("config", "n_head")]  # fmt: skip
VOCABS = {"reversed": lambda v: v[::-1], "all <bos>": lambda v: [BOS] * len(v), "one short": lambda v: v[:-1]}

# A structural change to a valid checkpoint: (kind, what, detail), small enough to print.
mutations = st.one_of(
    st.tuples(st.just("drop"), st.sampled_from(["meta.json", "vocab", *("param/" + n for n in PARAM_NAMES)]), st.none()),
    st.tuples(st.just("extra"), st.sampled_from(["param/bogus", "bogus", "param/" + PARAM_NAMES[0] + "x"]), other_arrays),
    st.tuples(st.just("reshape"), st.sampled_from(PARAM_NAMES), st.sampled_from(sorted(RESHAPES))),
    st.tuples(st.just("dtype"), st.sampled_from(PARAM_NAMES), st.sampled_from(sorted(RETYPES))),
    st.tuples(st.just("poison"), st.sampled_from(PARAM_NAMES), st.tuples(st.integers(0, 10**6), st.sampled_from([np.nan, np.inf, -np.inf]))),
    st.tuples(st.just("meta"), st.none(), json_values | other_arrays.map(lambda k: ("array", k))),
    st.tuples(st.just("meta_field"), st.sampled_from(META_PATHS), json_values),
    st.tuples(st.just("vocab"), st.none(), st.sampled_from(sorted(VOCABS)) | other_arrays.map(lambda k: ("array", k))),
    st.tuples(st.just("header"), st.sampled_from(PARAM_NAMES), st.integers(0, 10**12)),
)  # fmt: skip


def mutated(kind, what, detail) -> dict[str, bytes]:
    """A valid checkpoint's members (name -> .npy bytes) with one change applied."""
    raw = raw_arrays()
    arrays = {k: npy(v) for k, v in raw.items()}
    is_array = isinstance(detail, tuple) and len(detail) == 2 and detail[0] == "array"
    other = OTHER_ARRAYS[detail[1]] if is_array else OTHER_ARRAYS.get(detail) if kind == "extra" else None
    if kind == "drop":
        arrays.pop(what)
    elif kind == "extra":
        arrays[what] = npy(other)
    elif kind == "reshape":
        arrays["param/" + what] = npy(RESHAPES[detail](MODEL.params[what]))
    elif kind == "dtype":
        arrays["param/" + what] = npy(MODEL.params[what].astype(RETYPES[detail]))
    elif kind == "poison":
        b = MODEL.params[what].copy()
        b.flat[detail[0] % b.size] = detail[1]
        arrays["param/" + what] = npy(b)
    elif kind == "meta":
        arrays["meta.json"] = npy(other if other is not None else np.array(json.dumps(detail)))
    elif kind == "meta_field":
        meta = json.loads(str(raw["meta.json"]))
        target = meta
        for key in what[:-1]:
            target = target[key]
        target[what[-1]] = detail
        arrays["meta.json"] = npy(np.array(json.dumps(meta)))
    elif kind == "vocab":
        arrays["vocab"] = npy(other if other is not None else np.array(VOCABS[detail](TOK.vocab)))
    else:  # a .npy header that lies about the data after it
        a = MODEL.params[what]
        data = bytearray(arrays["param/" + what])
        header = data[:128].decode("latin1").replace(str(a.shape), str((detail,)))
        arrays["param/" + what] = header.encode("latin1") + bytes(data[128:])
    return arrays


@FUZZ
@given(mutations)
def test_wrong_contents_are_refused(tmp_path_factory, mutation):
    kind, what, detail = mutation
    data = zip_of({k + ".npy": v for k, v in mutated(kind, what, detail).items()})
    ckpt = load_or_refuse(tmp_path_factory, data)
    if ckpt is not None:
        # Only a change that leaves the meaning intact may load: a JSON value equal to the
        # original's (the same format_version drawn again), a header naming the true size.
        assert kind in ("meta_field", "header"), mutation
        assert_is_the_saved_model(ckpt)


@pytest.mark.parametrize("compressed", [True, False])
def test_the_fuzzed_originals_load(tmp_path_factory, compressed):
    ckpt = load_or_refuse(tmp_path_factory, GOOD[compressed])
    assert ckpt is not None
    assert_is_the_saved_model(ckpt)
