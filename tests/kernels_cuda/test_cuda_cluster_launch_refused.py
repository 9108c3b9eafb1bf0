"""The refused-cluster fallback at each op's launch site (test_cuda_cluster_refused.py: the helper and
the plans). CPU: launches faked on CPU memory, the first launch of a cluster past 8 blocks refused.
GPU (marked `gpu`, sm_90): every op at 16-block shapes through a launch that refuses clusters past 8
blocks, as such a device's would, against float64 references.
Run: scripts/test-in-place tests/kernels_cuda/test_cuda_cluster_launch_refused.py -m gpu
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
import torch
from cuda_host_launch import HostLaunch
from cuda_refusal_helpers import REFUSAL, raising
from cuda_xent_helpers import _close, _ours, _reference
from kernels_cuda import _driver, arrays, codegen, device_props
from kernels_cuda import cross_entropy_op as ce
from kernels_cuda import log_softmax_op as ls
from kernels_cuda import row_kernels as rk
from kernels_cuda import softmax_variants as variants
from kernels_cuda.backward_call import softmax_backward
from kernels_cuda.launch_types import H100
from labtools.ops import log_softmax_ref, softmax_ref, tolerance

# --- CPU: every op's launch site, the first cluster past 8 blocks refused --------------------------


class _RefusingLaunch(HostLaunch):
    """HostLaunch, but a launch of a cluster past 8 blocks raises `error`, as a refusing device's does.
    `tried`: the cluster size of every launch, in order."""

    tried: list[int] = []
    error: Exception = RuntimeError(REFUSAL)

    def __call__(self, stream, *pointers):
        _RefusingLaunch.tried.append(self.spec.cluster)
        if self.spec.cluster > 8:
            raise _RefusingLaunch.error
        super().__call__(stream, *pointers)

    two = __call__


@pytest.fixture
def host(no_device_refused, monkeypatch):
    """CPU torch tensors as device 0's, an H100 (device_for, which follows REFUSED_CLUSTER16), the
    launches `_RefusingLaunch`'s."""
    monkeypatch.setattr(codegen, "packed", _RefusingLaunch)
    monkeypatch.setattr(arrays, "check_device", lambda ops, x, fn: 0)
    monkeypatch.setattr(arrays.TorchOps, "stream", staticmethod(lambda x: 0))
    monkeypatch.setattr(variants, "current_stream", lambda device_index: 0)
    monkeypatch.setattr(device_props, "_device_props", lambda device_id: H100)
    monkeypatch.setattr(_RefusingLaunch, "tried", [])
    monkeypatch.setattr(_RefusingLaunch, "error", RuntimeError(REFUSAL))
    return _RefusingLaunch.tried


def _once_refused(call):
    """call() meeting the refusal: its result, after exactly one warning."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    assert [w.category for w in caught] == [RuntimeWarning], caught
    assert "device 0 refused a 16-block cluster" in str(caught[0].message)
    return result


def _no_warning(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    assert caught == []
    return result


def test_the_softmax_forward_plans_again_where_its_cluster_is_refused(host):
    x = torch.randn(3, 262144)  # fp32: 16-block clusters on an H100
    y = _once_refused(lambda: variants.softmax(x))
    assert host == [16, 8] and device_props.REFUSED_CLUSTER16 == {0}
    np.testing.assert_allclose(y.double().numpy(), softmax_ref(x.double().numpy()), rtol=1e-5, atol=1e-9)
    host.clear()
    again = _no_warning(lambda: variants.softmax(x))  # the cached call: 8 blocks from the start
    assert host == [8] and torch.equal(again, y)


def test_the_softmax_backward_plans_again_where_its_cluster_is_refused(host):
    y, dy = torch.softmax(torch.randn(3, 262144), -1), torch.randn(3, 262144)
    dx = _once_refused(lambda: softmax_backward(y, dy))
    assert host == [16, 0] and device_props.REFUSED_CLUSTER16 == {0}  # 8 blocks do not hold it: two passes
    y64, dy64 = y.double(), dy.double()
    ref = y64 * (dy64 - (y64 * dy64).sum(-1, keepdim=True))
    np.testing.assert_allclose(dx.double().numpy(), ref.numpy(), rtol=1e-5, atol=1e-12)
    host.clear()
    _no_warning(lambda: softmax_backward(y, dy))
    assert host == [0]


def test_a_launch_error_that_is_no_refusal_is_raised_as_it_was(host):
    error = _RefusingLaunch.error = RuntimeError("CUDA error: an illegal memory access was encountered")
    for call in (lambda: variants.softmax(torch.randn(2, 262144)),
                 lambda: softmax_backward(*(torch.randn(2, 262144),) * 2)):  # fmt: skip
        with pytest.raises(RuntimeError) as info:
            call()
        assert info.value is error
    assert host == [16, 16] and device_props.REFUSED_CLUSTER16 == set()


@pytest.fixture
def refusing(recorded, no_device_refused, monkeypatch):
    """`recorded`'s launches (CPU tensors as those of an sm_90 device, an H100 to device_for), except
    that a launch of a cluster past 8 blocks raises as a refusing device's does. Returns (the launches
    recorded, the cluster size of every launch tried)."""
    tried = []
    record = codegen.packed

    def packed(spec, *args):
        run = record(spec, *args)

        def launch(stream, *pointers):
            tried.append(spec.cluster)
            if spec.cluster > 8:
                raise RuntimeError(REFUSAL)
            run(stream, *pointers)

        return launch

    monkeypatch.setattr(codegen, "packed", packed)
    monkeypatch.setattr(device_props, "_device_props", lambda device_id: H100)
    return recorded, tried


def test_log_softmax_plans_again_where_its_cluster_is_refused(refusing):
    recorded, tried = refusing
    x = torch.randn(3, 262144)  # fp32: 16-block clusters on an H100, forward and backward
    device = x.get_device()  # (a CPU tensor's: -1)
    for direction, kernel in (("fwd", "softmax_cluster"), ("bwd", "log_softmax_backward")):
        device_props.REFUSED_CLUSTER16.clear()
        recorded.clear()
        tried.clear()
        with pytest.warns(RuntimeWarning, match=f"device {device} refused a 16-block cluster"):
            if direction == "fwd":
                ls._forward(x, -1)
            else:
                ls._backward(x, x, -1)
        assert device_props.REFUSED_CLUSTER16 == {device}
        assert tried[0] == 16 and len(tried) == 2 and tried[1] <= 8, (direction, tried)
        assert [(r.kernel, r.spec.cluster) for r in recorded] == [(kernel, tried[1])], direction
    assert tried == [16, 0]  # the backward without clusters: 10 (8 blocks do not hold the rows)


def test_log_softmax_raises_a_refusal_of_8_blocks_as_it_was(refusing, monkeypatch):
    recorded, tried = refusing
    monkeypatch.setattr(device_props, "_device_props", lambda device_id: replace(H100, max_cluster=8))
    error = RuntimeError(REFUSAL)
    monkeypatch.setattr(rk, "launch", raising(error))
    with pytest.raises(RuntimeError) as info:
        ls._forward(torch.randn(3, 262144), -1)  # 8 blocks (the device's most) refused: a real error
    assert info.value is error and device_props.REFUSED_CLUSTER16 == set()


@pytest.mark.parametrize("reduction", ["none", "mean", "mean-grad"])
def test_the_cross_entropy_plans_again_where_its_cluster_is_refused(refusing, reduction):
    recorded, tried = refusing
    x, t = torch.randn(3, 262144), torch.randint(0, 262144, (3,))  # 16 blocks of 8 on an H100
    device = x.get_device()
    if reduction == "mean-grad":
        x.requires_grad_()
    with pytest.warns(RuntimeWarning, match=f"device {device} refused a 16-block cluster"):
        ce.cross_entropy(x, t, reduction=reduction.removesuffix("-grad"))
    assert device_props.REFUSED_CLUSTER16 == {device}
    forward = [r.kernel for r in recorded if "forward" in r.kernel]
    assert forward == ["cross_entropy_forward"] and 16 in tried  # 09, once the cluster was refused
    recorded.clear()
    tried.clear()
    ce.cross_entropy(x, t, reduction=reduction.removesuffix("-grad"))  # (the packed launch cached)
    assert [r.kernel for r in recorded if "forward" in r.kernel] == ["cross_entropy_forward"]
    assert max(tried) == 0


# --- GPU -----------------------------------------------------------------------------------------


class _Refusing:
    """A launch of a cluster past 8 blocks on a device that refuses them: each call raises."""

    def __init__(self, error: Exception):
        self.error = error

    def __call__(self, *args):
        raise self.error

    two = __call__
    rows = __call__


@pytest.fixture
def refusing_device(no_device_refused, monkeypatch):
    """codegen.packed, but a launch of a cluster of more than 8 blocks raises (a RuntimeError naming
    the misconfiguration, or the driver's own error for CUDA_ERROR_INVALID_CLUSTER_SIZE): call the
    result with "runtime" or "driver". Every cached plan and packed launch is dropped before and after."""
    real = codegen.packed
    monkeypatch.setattr(rk, "_launches", {})

    def use(form: str):
        def packed(spec, *args):
            if spec.cluster <= 8:
                return real(spec, *args)
            if form == "driver":
                return _Refusing(_driver.CudaError(f"launching {spec.kernel}", 912))
            return _Refusing(RuntimeError(REFUSAL))

        monkeypatch.setattr(codegen, "packed", packed)

    return use


def _check(got, ref, dtype, what):
    np.testing.assert_allclose(got, ref, **tolerance(dtype), err_msg=what)


@pytest.mark.gpu
@pytest.mark.parametrize(("dtype", "form"), [("float32", "runtime"), ("bfloat16", "driver")])
def test_every_op_plans_again_where_the_device_refuses_16_blocks(refusing_device, dtype, form):
    """softmax forward and backward, log_softmax forward and backward and the cross-entropy (forward
    and reduced) at 4 x 262144 (16-block clusters on an H100 or H200) on a device refusing them: each op
    meets the refusal at its own launch, warns once, and gives float64's results."""
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the cluster kernels run on sm_90")
    refusing_device(form)
    g = torch.Generator(device="cuda").manual_seed(0)
    x = (torch.randn((4, 262144), generator=g, device="cuda") * 3).to(getattr(torch, dtype))
    t = torch.randint(0, x.shape[1], (x.shape[0],), generator=g, device="cuda")
    device = x.get_device()
    x64 = x.double().cpu()
    dy = torch.randn(x.shape, generator=g, device="cuda").to(x.dtype)
    dy64 = dy.double().cpu()

    def softmax():
        _check(variants.softmax(x).double().cpu().numpy(), softmax_ref(x64.numpy()), dtype, "softmax")

    def backward():
        y = torch.softmax(x.float(), -1).to(x.dtype)
        y64 = y.double().cpu()
        ref = y64 * (dy64 - (y64 * dy64).sum(-1, keepdim=True))
        top = ref.abs().max()
        _check((softmax_backward(y, dy).double().cpu() / top).numpy(), (ref / top).numpy(), dtype, "backward")

    def log_softmax():
        _check(ls.log_softmax(x).double().cpu().numpy(), log_softmax_ref(x64.numpy()), dtype, "log_softmax")

    def log_backward():
        y = torch.log_softmax(x.float(), -1).to(x.dtype)
        ref = dy64 - y.double().cpu().exp() * dy64.sum(-1, keepdim=True)
        top = ref.abs().max()
        got = ls.log_softmax_backward(y, dy).double().cpu() / top
        _check(got.numpy(), (ref / top).numpy(), dtype, "log_softmax backward")

    def cross_entropy(reduction):
        def run():
            loss, grad = _ours(x, t, reduction=reduction)
            ref_loss, ref_grad = _reference(x, t, reduction=reduction)
            _close(loss, ref_loss, dtype, f"cross_entropy {reduction}")
            _close(grad, ref_grad, dtype, f"cross_entropy {reduction} gradient")

        return run

    ops = {"softmax": softmax, "softmax_backward": backward, "log_softmax": log_softmax,
           "log_softmax_backward": log_backward, "cross_entropy none": cross_entropy("none"),
           "cross_entropy mean": cross_entropy("mean")}  # fmt: skip
    for name, op in ops.items():
        device_props.REFUSED_CLUSTER16.clear()  # each op meets the refusal at its own launch
        variants.clear_caches()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            op()
        refusals = [w for w in caught if "refused" in str(w.message)]
        assert len(refusals) == 1 and refusals[0].category is RuntimeWarning, (name, caught)
        assert device_props.REFUSED_CLUSTER16 == {device}, name
        with warnings.catch_warnings(record=True) as caught:  # planned with 8 blocks now: no refusal
            warnings.simplefilter("always")
            op()
        assert not [w for w in caught if "refused" in str(w.message)], name
