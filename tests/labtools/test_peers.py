"""Peers (QuACK, Liger): registered when installed, listed as not installed otherwise, and
a peer's failure at a shape is recorded as unsupported there, never as a crash or a failure.
The peers' packages are stood in for by fake modules with the same entry points and the
same limits, running on the CPU."""

import io
import sys
import types

import pytest
from labtools import peers, registry, sweep
from labtools.ceilings import Ceilings

torch = pytest.importorskip("torch")


def test_not_installed_is_one_line_per_run(monkeypatch):
    monkeypatch.setattr(peers, "installed_version", lambda dist: None)
    assert peers.status() == {
        "QuACK": "not installed (pip install quack-kernels)",
        "Liger": "not installed (pip install liger-kernel)",
    }
    line = peers.status_line()
    assert (
        "\n" not in line and line.startswith("peers: QuACK not installed") and "Liger not installed" in line
    )
    assert peers.register(device="cpu") == []


def test_known_limits():
    assert peers.quack_supports((64, 600), "float32") and peers.quack_supports((64, 600), "bfloat16")
    assert peers.quack_supports((64, 4100), "float32") and not peers.quack_supports((64, 4100), "bfloat16")
    assert not peers.quack_supports((64, 50257), "bfloat16") and not peers.quack_supports(
        (64, 50257), "float32"
    )
    assert not peers.quack_supports((2, 64, 600), "float32")  # 2-D only
    assert peers.liger_supports((1024, 65536), "float32") and not peers.liger_supports(
        (1024, 131072), "float32"
    )


def _vector_check(x):
    vec = 16 // x.element_size()
    assert x.shape[-1] % vec == 0, f"Input N {x.shape[-1]} is not divisible by vector size {vec}"


@pytest.fixture
def fake_peers(monkeypatch, fake_registry):
    """Fake quack and liger_kernel modules (installed as quack-kernels 0.6.5 and liger-kernel
    0.8.5); this fake Liger also raises above N = 1000, a limit its `supports` does not know."""
    calls = []

    def quack_softmax(x):
        _vector_check(x)
        calls.append("quack.softmax")
        return torch.softmax(x.float(), -1).to(x.dtype)

    def quack_softmax_bwd(dy, y):  # QuACK's order: dy first
        _vector_check(dy)
        calls.append("quack.softmax_bwd")
        yf, dyf = y.float(), dy.float()
        return (yf * (dyf - (yf * dyf).sum(-1, keepdim=True))).to(y.dtype)

    class LigerSoftmaxFunction:
        @staticmethod
        def apply(x):
            if x.shape[-1] > 1000:
                raise RuntimeError("Cannot launch Triton kernel since n exceeds the recommended blocksize")
            calls.append("liger.forward")
            return torch.softmax(x.float(), -1).to(x.dtype)

    def calculate_settings(n):
        return 1 << (n - 1).bit_length(), 4

    def liger_backward(dy, y, block, warps, multi_block):
        assert block >= y.shape[-1] and multi_block is False
        calls.append("liger.backward")
        return quack_softmax_bwd(dy, y)

    quack = types.ModuleType("quack")
    quack.softmax = quack_softmax
    quack_mod = types.ModuleType("quack.softmax")
    quack_mod.softmax_bwd = quack_softmax_bwd
    liger_ops = types.ModuleType("liger_kernel.ops")
    liger_ops.LigerSoftmaxFunction = LigerSoftmaxFunction
    liger_utils = types.ModuleType("liger_kernel.ops.utils")
    liger_utils.calculate_settings = calculate_settings
    liger_sm = types.ModuleType("liger_kernel.ops.softmax")
    liger_sm._softmax_backward = liger_backward
    for name, mod in {
        "quack": quack,
        "quack.softmax": quack_mod,
        "liger_kernel": types.ModuleType("liger_kernel"),
        "liger_kernel.ops": liger_ops,
        "liger_kernel.ops.utils": liger_utils,
        "liger_kernel.ops.softmax": liger_sm,
    }.items():
        monkeypatch.setitem(sys.modules, name, mod)
    versions = {"quack-kernels": "0.6.5", "liger-kernel": "0.8.5"}
    monkeypatch.setattr(peers, "installed_version", versions.get)
    names = peers.register(device="cpu")
    assert names == [
        "quack.softmax",
        "quack.softmax_backward",
        "liger.softmax",
        "liger.softmax_backward",
        "quack.cross_entropy",
        "liger.cross_entropy",
    ]
    # a torch reference on the CPU, so the peers' records carry ratios
    from labtools import references

    references.register()
    return calls


def _sweep(op, shapes, dtypes=("float32", "bfloat16")):
    cfg = sweep.SweepConfig(
        op, "cpu", shapes, dtypes, impls=("QuACK", "Liger", "QuACK bwd", "Liger bwd"), time_cap_s=0.02
    )
    cfg.impls = tuple(i for i in cfg.impls if i.endswith("bwd") == (op == "softmax_backward"))
    return sweep.run_sweep(
        cfg,
        ceilings=Ceilings("cpu: test", 10.0, {}, None),
        environment={"python": "3", "versions": {}, "devices": []},
        progress=sweep.Progress(0, io.StringIO()),
    )


def test_peers_run_beside_the_reference_and_their_limits_are_skips(fake_peers):
    s = _sweep("softmax", ((8, 600), (4, 1004), (4, 2048)))
    timed = {(r.impl, tuple(r.shape), r.dtype) for r in s.records}
    assert ("quack.softmax", (8, 600), "bfloat16") in timed and (
        "liger.softmax",
        (8, 600),
        "float32",
    ) in timed
    assert ("torch.softmax.cpu", (4, 2048), "float32") in timed
    assert s.failed == []  # nothing a peer did counts as a failure of the run
    why = {(e["impl"], tuple(e["shape"]), e["dtype"]): e["why"] for e in s.skipped}
    # 1004 is a multiple of 4, not of 8: QuACK runs it in fp32 only, by its stated limit
    assert ("quack.softmax", (4, 1004), "float32") in timed
    assert why[("quack.softmax", (4, 1004), "bfloat16")] == (
        "supports() rejects this shape (needs N % (16 / itemsize) == 0: N % 4 in fp32, N % 8 in fp16/bf16)"
    )
    # Liger raises above 1000 here: unsupported at those shapes, with its message
    for shape in ((4, 1004), (4, 2048)):
        w = why[("liger.softmax", shape, "float32")]
        assert w.startswith("unsupported by liger-kernel at this shape (RuntimeError: Cannot launch")
    r = next(r for r in s.records if r.impl == "quack.softmax")
    assert r.label == "QuACK" and r.backend == "quack" and r.call_us > 0 and r.vs_ref is not None
    assert s.peers == {"QuACK": "quack-kernels 0.6.5", "Liger": "liger-kernel 0.8.5"}
    assert "peers: QuACK quack-kernels 0.6.5; Liger liger-kernel 0.8.5" in sweep.format_table(s)
    assert "quack.softmax" in fake_peers and "liger.forward" in fake_peers


def test_peer_backwards_take_our_argument_order(fake_peers):
    s = _sweep("softmax_backward", ((8, 600),), ("float32",))
    assert s.failed == []  # a swapped (y, dy) would be a wrong result, caught by the output check
    assert {r.impl for r in s.records} >= {"quack.softmax_backward", "liger.softmax_backward"}
    assert "quack.softmax_bwd" in fake_peers and "liger.backward" in fake_peers


def test_load_plugins_registers_installed_peers(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_CHECKS", {})
    monkeypatch.setattr(registry, "_plugins_loaded", False)
    monkeypatch.setattr(registry, "entry_points", lambda group: [])
    monkeypatch.setattr(peers, "installed_version", {"liger-kernel": "0.8.5"}.get)
    registry.load_plugins()
    names = {i.name for i in registry.implementations(load=False)}
    assert {"liger.softmax", "liger.softmax_backward"} <= names and "quack.softmax" not in names
    assert registry.get("liger.softmax").device == "cuda" and registry.get("liger.softmax").meta["peer"]
