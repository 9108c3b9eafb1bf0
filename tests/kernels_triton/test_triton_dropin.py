"""kernels_triton.softmax as a drop-in for F.softmax inside a user's program: the tensor's
device decides where it runs, whatever the current device, and the caller's state is kept."""

from __future__ import annotations

import kernels_triton
import pytest
import torch

two_gpus = pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs two CUDA devices"
)


@pytest.mark.gpu
@two_gpus
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(4096, 600), (8, 50257), (2, 262144), (64, 8192)])
def test_tensor_on_another_device_than_the_current_one(shape, dtype):
    """On cuda:1 with cuda:0 current: every path (cold, cached, backward, in place, a second
    stream) runs on cuda:1, gives torch's answer, and leaves cuda:0 current."""
    torch.cuda.set_device(0)
    x = torch.randn(shape, device="cuda:1", dtype=dtype) * 4
    want = torch.softmax(x.float(), -1)
    tol = dict(atol=1e-5, rtol=1e-4) if dtype == torch.float32 else dict(atol=4e-3, rtol=2e-2)
    for _ in range(2):  # the first call plans, the second runs the cached plan
        y = kernels_triton.softmax(x)
        assert y.device == x.device and torch.cuda.current_device() == 0
        torch.testing.assert_close(y.float(), want, **tol)
    xg = x.clone().requires_grad_()
    dy = torch.randn_like(x)
    for _ in range(2):
        (g,) = torch.autograd.grad(kernels_triton.softmax(xg), xg, dy)
        (want_g,) = torch.autograd.grad(torch.softmax(xg.float(), -1), xg, dy.float())
        torch.testing.assert_close(g.float(), want_g.float(), **tol)
    for _ in range(2):
        z = x.clone()
        assert kernels_triton.softmax_(z) is z
        torch.testing.assert_close(z.float(), want, **tol)
    side = torch.cuda.Stream(device="cuda:1")
    with torch.cuda.stream(side):
        y = kernels_triton.softmax(x)
    side.synchronize()
    torch.testing.assert_close(y.float(), want, **tol)
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)
    assert torch.cuda.current_device() == 0
    # the current device still works: the context was not lost
    assert torch.ones(3, device="cuda:0").sum().item() == 3
