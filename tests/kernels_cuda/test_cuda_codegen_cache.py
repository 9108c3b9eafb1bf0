"""The disk cache verifies what it serves, without a GPU: a damaged or forged entry (its JSON,
cubin or PTX, its resource report, a file name outside the cache) is discarded with one warning
and rebuilt, random damage to an entry is served only if the entry's content is intact, two
processes filling one cache at once leave every entry whole, and an entry whose NVRTC log has no
resource report is still served from the cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kernels_cuda import _diskcache, codegen, compiler
from kernels_cuda import softmax_variants as variants
from kernels_cuda.codegen import Spec

SMALL = Spec("00_vector_add.cu", "vector_add", "float32")


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path):
    """An empty disk cache and an empty memory cache; `reload()` is a new process's compile."""
    monkeypatch.setenv(codegen.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(compiler, "_compiled", {})
    return tmp_path


def _reload(spec=SMALL):
    compiler._compiled.clear()
    return codegen.compile_spec(spec, "sm_90")


def _meta(folder):
    (path,) = folder.glob("*.json")
    return path, json.loads(path.read_text())


def _forge_resources(folder):
    path, meta = _meta(folder)
    meta["fields"]["resources"]["registers"] = 1  # a report that no longer matches the digest
    path.write_text(json.dumps(meta))


def _forge_valid_digest(folder):
    path, meta = _meta(folder)
    meta["fields"]["resources"]["registers"] = -1
    meta["digest"] = _diskcache.digest(meta)
    path.write_text(json.dumps(meta))


def _forge_file_name(folder):
    path, meta = _meta(folder)
    meta["cubin"] = "../elsewhere.cubin"
    meta["digest"] = _diskcache.digest(meta)
    path.write_text(json.dumps(meta))


CORRUPTIONS = {
    "corrupt JSON": lambda f: _meta(f)[0].write_text("{not json"),
    "truncated JSON": lambda f: _meta(f)[0].write_bytes(_meta(f)[0].read_bytes()[:100]),
    "JSON of another shape": lambda f: _meta(f)[0].write_text("[1, 2, 3]"),
    "garbage cubin": lambda f: next(f.glob("*.cubin")).write_bytes(os.urandom(4096)),
    "cubin with a flipped byte": lambda f: _flip(next(f.glob("*.cubin"))),
    "missing cubin": lambda f: next(f.glob("*.cubin")).unlink(),
    "garbage PTX": lambda f: next(f.glob("*.ptx")).write_text(".version 1.0"),
    "forged resources": _forge_resources,
    "resources malformed under a valid digest": _forge_valid_digest,
    "a file name outside the cache": _forge_file_name,
}


def _flip(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_bad_cache_entry_is_discarded_with_one_warning_and_rebuilt(fresh_cache, corruption):
    good = codegen.compile_spec(SMALL, "sm_90")
    CORRUPTIONS[corruption](fresh_cache)
    with pytest.warns(codegen.CacheWarning) as caught:
        rebuilt = _reload()
    assert len(caught) == 1 and "\n" not in str(caught[0].message)
    assert "vector_add.f32" in str(caught[0].message) and "rebuilding" in str(caught[0].message)
    assert not rebuilt.from_cache and rebuilt.resources == good.resources
    assert rebuilt.cubin.startswith(b"\x7fELF") and rebuilt.cubin_path.read_bytes() == rebuilt.cubin
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        served = _reload()
    assert served.from_cache and served.cubin == rebuilt.cubin and served.resources == good.resources


def _same_content(kind: str, blob: bytes, before: bytes) -> bool:
    """Whether a damaged file still says what it said: the same bytes, or for the JSON the same
    document (a changed byte of whitespace, say a newline turned into a carriage return)."""
    if blob == before or kind != "json":
        return blob == before
    try:
        return json.loads(blob) == json.loads(before)
    except ValueError:
        return False


@given(data=st.data())
def test_random_damage_to_an_entry_is_served_only_if_the_entry_is_intact(data):
    """Random truncations and byte changes of the JSON or cubin: the entry is either served
    unchanged, when its content is, or discarded with one warning; never served changed.
    NVRTC runs once."""
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as mp:
        mp.setenv(codegen.CACHE_ENV, folder)
        mp.setattr(compiler, "_compiled", {})
        good = codegen.compile_spec(SMALL, "sm_90")
        compiled = (good.cubin, good.ptx_path.read_bytes(), good.log, 0.1)
        mp.setattr(compiler, "_nvrtc_compile", lambda spec, arch: compiled)
        # Draw the file's kind, not its path: the folder differs between a Hypothesis example
        # and its replay, and a strategy over different values is a flaky definition.
        kind = data.draw(st.sampled_from(["cubin", "json"]))
        path = good.cubin_path if kind == "cubin" else Path(folder) / f"{good.cubin_path.name[:32]}.json"
        before = path.read_bytes()
        blob = bytearray(before)

        def place(n: int) -> int:  # a position in [0, n]: drawn as a fraction, since n itself varies
            return data.draw(st.integers(0, 2**16)) * n // 2**16  # between runs (the JSON's compile time)

        if data.draw(st.booleans()):
            blob = blob[: place(len(blob))]
        for _ in range(data.draw(st.integers(0, 3))):
            if blob:
                blob[min(place(len(blob)), len(blob) - 1)] = data.draw(st.integers(0, 255))
        path.write_bytes(bytes(blob))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            again = _reload()
        cache_warnings = [w for w in caught if issubclass(w.category, codegen.CacheWarning)]
        if _same_content(kind, bytes(blob), before):
            assert again.from_cache and not cache_warnings
        else:
            assert len(cache_warnings) == 1 and not again.from_cache
        assert again.cubin == good.cubin and again.resources == good.resources


_CHILD = """
import sys, warnings
from kernels_cuda import codegen, softmax_variants as v
warnings.simplefilter("error", codegen.CacheWarning)
specs = [v.online_spec(d, 1) for d in v.DTYPES] + [v.fused_spec(d, 32, 1, 1) for d in v.DTYPES]
for spec in specs:
    r = codegen.compile_spec(spec, "sm_90")
    assert r.cubin.startswith(b"\\x7fELF")
print(len(specs), "ok")
"""


def test_two_processes_filling_one_cache_at_once_leave_every_entry_whole(fresh_cache):
    env = {**os.environ, codegen.CACHE_ENV: str(fresh_cache)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0 and out.strip() == b"6 ok", err.decode()
    assert not list(fresh_cache.glob(".*.tmp"))  # no write left a part behind
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        served = [
            _reload(s)
            for s in (variants.online_spec("float32", 1), variants.fused_spec("bfloat16", 32, 1, 1))
        ]
    assert all(r.from_cache for r in served)


def test_an_nvrtc_log_without_a_resource_report_still_gives_a_cached_cubin(fresh_cache, monkeypatch):
    def no_report(log, kernel):
        raise ValueError("no ptxas report")

    monkeypatch.setattr(compiler, "parse_resources", no_report)
    first = codegen.compile_spec(SMALL, "sm_90")
    assert first.resources is None and first.cubin.startswith(b"\x7fELF")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = _reload()
    assert again.from_cache and again.resources is None and again.cubin == first.cubin
    assert "vector_add.f32  sm_90     ?" in codegen.format_table([again])
