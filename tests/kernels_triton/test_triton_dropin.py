"""kernels_triton.softmax as a drop-in for F.softmax inside a user's program: the tensor's
device decides where it runs, whatever the current device, and the caller's state is kept."""

from __future__ import annotations

import kernels_triton
import pytest
import torch

two_gpus = pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs two CUDA devices"
)


def streams() -> tuple:
    """The current stream of each device: a call must leave them as they were."""
    return tuple(torch.cuda.current_stream(d) for d in range(torch.cuda.device_count()))


# one pass or a warp a row (600), the cluster kernels
# (262144 and odd 50257 on sm_90), the looped kernels (300000; the fp32 backward at 200000; 64 x
# 8192; 50257 before sm_90), float64
SHAPES = [(4096, 600), (8, 50257), (2, 262144), (64, 8192), (4, 300000), (8, 200000)]


@pytest.mark.gpu
@two_gpus
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{n}" for m, n in SHAPES])
def test_tensor_on_another_device_than_the_current_one(shape, dtype):
    """On cuda:1 with cuda:0 current: every path (cold, cached, a new row count, backward, in
    place, a second stream) runs on cuda:1, gives torch's answer, and leaves cuda:0 current
    and every device's current stream as it was."""
    torch.cuda.set_device(0)
    before = streams()
    x = torch.randn(shape, device="cuda:1", dtype=dtype) * 4
    want = torch.softmax(x.double(), -1)
    tol = {
        torch.float32: dict(atol=1e-5, rtol=1e-4),
        torch.bfloat16: dict(atol=4e-3, rtol=2e-2),
        torch.float64: dict(atol=1e-12, rtol=0),
    }[dtype]
    softmax = kernels_triton.softmax
    for rows in (shape[0], shape[0], max(1, shape[0] // 2 - 1)):  # plan, cached plan, a new M
        y = softmax(x[:rows])
        assert y.device == x.device and torch.cuda.current_device() == 0 and streams() == before
        torch.testing.assert_close(y.double(), want[:rows], **tol)
    xg = x.clone().requires_grad_()
    dy = torch.randn_like(x)
    (want_g,) = torch.autograd.grad(torch.softmax(xg.double(), -1), xg, dy.double())
    for _ in range(2):
        (g,) = torch.autograd.grad(softmax(xg), xg, dy)
        assert torch.cuda.current_device() == 0 and streams() == before
        torch.testing.assert_close(g.double(), want_g.double(), **tol)
    y = softmax(x)
    for _ in range(2):
        dx = kernels_triton.softmax_backward(y, dy)
        assert torch.cuda.current_device() == 0 and streams() == before
    for _ in range(2):
        z = x.clone()
        assert kernels_triton.softmax_(z) is z
        assert torch.cuda.current_device() == 0 and streams() == before
        torch.testing.assert_close(z.double(), want, **tol)
    side = torch.cuda.Stream(device="cuda:1")
    with torch.cuda.stream(side):
        y = softmax(x)
        dx2 = kernels_triton.softmax_backward(y, dy)
    side.synchronize()
    assert streams() == before
    torch.testing.assert_close(y.double(), want, **tol)
    torch.testing.assert_close(dx2, dx, rtol=0, atol=0)  # the same kernels on another stream
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)
    assert torch.cuda.current_device() == 0
    # the current device still works: the context was not lost
    assert torch.ones(3, device="cuda:0").sum().item() == 3
