"""The public API on bad input, and the registry entries: all without a GPU."""

from __future__ import annotations

import kernels_cuda
import numpy as np
import pytest
import torch
from kernels_cuda import arrays
from kernels_cuda import plugin as cuda_plugin
from labtools import registry


def test_a_cpu_tensor_is_refused_with_a_pointer_to_cuda():
    with pytest.raises(TypeError, match=r"on cpu, not a CUDA device"):
        kernels_cuda.softmax(torch.randn(4, 5))
    with pytest.raises(TypeError, match=r"on cpu, not a CUDA device"):
        kernels_cuda.vector_add(torch.randn(4), torch.randn(4))


def test_a_numpy_array_is_refused():
    with pytest.raises(TypeError, match="got a NumPy array"):
        kernels_cuda.softmax(np.random.default_rng().standard_normal((4, 5)))
    with pytest.raises(TypeError, match="got a list"):
        kernels_cuda.softmax([1.0, 2.0])
    with pytest.raises(TypeError, match="got a NumPy array"):
        kernels_cuda.vector_add(np.ones(3), np.ones(3))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bool, torch.complex64])
def test_unsupported_dtypes_are_named(dtype):
    x = torch.ones(4, 5, dtype=dtype)
    with pytest.raises(TypeError, match=f"unsupported dtype {str(dtype).removeprefix('torch.')}"):
        kernels_cuda.softmax(x)
    with pytest.raises(TypeError, match="unsupported dtype"):
        kernels_cuda.vector_add(x, x)


@pytest.mark.parametrize("dim", [2, -3, 5])
def test_a_dim_out_of_range_is_named(dim):
    with pytest.raises(ValueError, match=f"dim {dim} is out of range for a 2-d input"):
        kernels_cuda.softmax(torch.randn(4, 5), dim=dim)


def test_a_non_integer_dim_and_an_unknown_variant_are_named():
    with pytest.raises(TypeError, match="dim must be an int"):
        kernels_cuda.softmax(torch.randn(4, 5), dim="last")
    with pytest.raises(ValueError, match="unknown variant 'v9'"):
        kernels_cuda.softmax(torch.randn(4, 5), variant="v9")


def test_vector_add_needs_matching_operands():
    with pytest.raises(ValueError, match="must match"):
        kernels_cuda.vector_add(torch.randn(4), torch.randn(5))
    with pytest.raises(ValueError, match="must match"):
        kernels_cuda.vector_add(torch.randn(4), torch.randn(4).half())
    with pytest.raises(TypeError, match="got a NumPy array"):
        kernels_cuda.vector_add(torch.randn(4), np.ones(4, np.float32))


def test_poisoned_outputs_start_as_nan_so_an_unwritten_element_shows():
    like = torch.zeros(1, dtype=torch.bfloat16)
    with arrays.poison_outputs():
        out = arrays.TorchOps.empty((3, 4), like)
    assert out.shape == (3, 4) and out.dtype == torch.bfloat16 and torch.isnan(out).all()
    assert not arrays.poisoning  # only inside the block


def test_register_adds_every_variant_with_its_designed_range():
    registry.load_plugins()
    cuda_plugin.register()
    impls = {i.name: i for i in registry.implementations("softmax", backend="cuda-c")}
    assert set(impls) == {
        "cuda.v1_naive",
        "cuda.v2_shared",
        "cuda.v3_fused",
        "cuda.v4_cluster",
        "cuda.v4_online",
        "cuda.auto",
    }
    assert all(
        i.device == "cuda" and set(i.dtypes) == {"float32", "float16", "bfloat16"} for i in impls.values()
    )
    assert impls["cuda.v1_naive"].accepts((4096, 600), "float32")
    assert not impls["cuda.v1_naive"].accepts((1024, 131072), "float32")
    assert impls["cuda.v3_fused"].accepts((8, 32768), "bfloat16")
    assert not impls["cuda.v3_fused"].accepts((8, 32769), "bfloat16")
    assert not impls["cuda.v4_cluster"].accepts((4096, 600), "float32")
    assert all(
        impls["cuda.auto"].accepts(s, d) for s in [(1, 1), (256, 262144)] for d in ("float32", "bfloat16")
    )
    assert registry.get("cuda.vector_add").op == "vector_add"
    assert any(c.name == "cuda.softmax.correctness" and c.needs_cuda for c in registry.checks())


def test_registered_functions_reject_cpu_inputs_like_the_api():
    fn = registry.get("cuda.auto").fn
    with pytest.raises(TypeError, match="CUDA"):
        fn(torch.randn(2, 3))


def test_every_export_is_what_the_package_names_in_any_import_order():
    # Importing a submodule sets the package attribute of its name; a module named like an export
    # would shadow the function once imported, so no module may be.
    import importlib
    import pkgutil
    import types

    modules = {m.name for m in pkgutil.iter_modules(kernels_cuda.__path__)}
    assert not modules & set(kernels_cuda.__all__), "a module named like an export shadows it"
    for module in modules - {"__main__"}:
        importlib.import_module(f"kernels_cuda.{module}")
    from kernels_cuda import cross_entropy, log_softmax, softmax_backward, token_logprobs_and_entropy
    from kernels_cuda.cross_entropy_op import cross_entropy as cross_entropy_function

    for fn in (cross_entropy, log_softmax, softmax_backward, token_logprobs_and_entropy):
        assert isinstance(fn, types.FunctionType), fn
    assert kernels_cuda.cross_entropy is cross_entropy is cross_entropy_function
    assert kernels_cuda.log_softmax is log_softmax
