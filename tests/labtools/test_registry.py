"""Implementations register themselves; labtools imports no kernel package."""

import subprocess
import sys
from pathlib import Path

import pytest
from labtools import registry
from labtools.registry import Implementation


def test_register_filter_and_cost():
    impl = Implementation(
        lambda x: x,
        "softmax",
        "test.identity",
        "numpy",
        "id",
        device="cpu",
        dtypes=("float32",),
        supports=lambda shape, dtype: shape[-1] <= 1024,
    )
    registry.register(impl)
    try:
        assert registry.get("test.identity") is impl
        assert impl in registry.implementations("softmax", device="cpu")
        assert impl not in registry.implementations("softmax", device="cuda")
        assert impl.cost((8, 100), 4) == (6400, 4000)
        assert impl.accepts((8, 100), "float32") and not impl.accepts((8, 2048), "float32")
        assert not impl.accepts((8, 100), "bfloat16")
        with pytest.raises(ValueError, match="already registered"):
            registry.register(impl)
    finally:
        registry.unregister("test.identity")
    with pytest.raises(KeyError):
        registry.get("test.identity")


def test_unknown_op_is_refused():
    with pytest.raises(ValueError, match="unknown op"):
        registry.register(Implementation(abs, "fft", "test.fft", "numpy", "fft"))


def test_references_are_registered():
    names = {i.name for i in registry.implementations()}
    assert "numpy.softmax" in names
    pytest.importorskip("torch", reason="the torch references register only where torch is installed")
    assert {"torch.softmax.cuda", "torch.compile.softmax.cuda", "torch.copy.cuda"} <= names
    assert "torch.compile.softmax_backward.cuda" in names
    refs = [i for i in registry.implementations("softmax", device="cuda") if i.is_reference]
    assert [i.label for i in refs] == ["F.softmax"]


def test_labtools_imports_no_kernel_package():
    code = (
        "import sys, labtools, labtools.bench, labtools.registry, labtools.ceilings, labtools.cli;"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('kernels_cuda', 'kernels_triton', 'minigpt_np', 'minigpt_torch', 'torch', 'triton', 'cupy')];"
        "print(bad); assert not bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_checks_register_and_unregister():
    chk = registry.Check("test.check", lambda: {"passed": True}, needs_cuda=False)
    registry.register_check(chk)
    try:
        assert chk in registry.checks()
        assert chk.fn()["passed"] is True
    finally:
        registry.unregister("test.check")
    assert chk not in registry.checks()


def test_compiled_reference_compiles_every_shape_past_the_recompile_limit(monkeypatch):
    """Every (shape, dtype) gets its own compiled graph; none falls back to eager, and the
    recompile limit is not raised for it."""
    torch = pytest.importorskip("torch")
    import torch._dynamo.config as cfg
    from labtools import references
    from torch._dynamo.utils import counters

    name = "recompile_limit" if hasattr(cfg, "recompile_limit") else "cache_size_limit"
    monkeypatch.setattr(references, "COMPILE_KW", {"dynamic": False, "backend": "eager"})
    monkeypatch.setattr(references, "_compiled", {})
    before = counters["stats"]["unique_graphs"]
    with cfg.patch(**{name: 2}):  # config modules restore themselves; monkeypatch would hide the key
        for n in range(1, 6):
            x = torch.randn(2, n)
            torch.testing.assert_close(references._compiled_softmax(x), torch.softmax(x, -1))
            y, dy = torch.softmax(x, -1), torch.randn(2, n)
            expected = torch._softmax_backward_data(dy, y, -1, y.dtype)
            torch.testing.assert_close(references._compiled_softmax_backward(y, dy), expected)
        assert getattr(cfg, name) == 2  # Dynamo's configuration is the user's: left as it was
    assert counters["stats"]["unique_graphs"] - before == 10


def test_compiled_reference_keeps_a_functions_closure_and_defaults(monkeypatch):
    """The per-shape copy of an op's function is the same function: closures and keyword
    defaults included."""
    torch = pytest.importorskip("torch")
    from labtools import references

    monkeypatch.setattr(references, "COMPILE_KW", {"dynamic": False, "backend": "eager"})
    monkeypatch.setattr(references, "_compiled", {})
    scale = 3.0

    def scaled(x, *, dim=-1):
        return torch.softmax(x * scale, dim)

    x = torch.randn(2, 5)
    torch.testing.assert_close(references._compiled_call("test", scaled, x), torch.softmax(3.0 * x, -1))


def _labtools_imports(module: str) -> set[str]:
    """The labtools modules `module` imports anywhere in its source (function bodies too)."""
    import ast
    import importlib.util

    tree = ast.parse(Path(importlib.util.find_spec(module).origin).read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return {name for name in found if name.startswith("labtools")}


def test_registry_and_references_import_in_one_direction():
    assert "labtools.registry" in _labtools_imports("labtools.references")
    assert not {"labtools.references"} & _labtools_imports("labtools.registry")
    # the references still arrive, as a built-in plugin named by string
    registry.load_plugins(force=True)
    assert {"numpy.softmax", "torch.softmax.cpu"} <= {i.name for i in registry.implementations()}
