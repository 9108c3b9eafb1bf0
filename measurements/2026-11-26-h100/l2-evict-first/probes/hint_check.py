"""One case of kernels_cuda (op, M, N, dtype) on the GPU against F.softmax: prints ok and the
largest difference, or the error. Run one process a case: a CUDA error ends the process's context."""

import sys

import kernels_cuda
import torch

op, m, n, dtype = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), getattr(torch, sys.argv[4])
x = torch.randn(m, n, device="cuda", dtype=dtype)
y_ref = torch.softmax(x.float(), -1)
try:
    if op == "fwd":
        out = kernels_cuda.softmax(x)
        ref = y_ref
    else:
        y = y_ref.to(dtype)
        dy = torch.randn_like(y)
        out = kernels_cuda.softmax_backward(y, dy)
        yf, dyf = y.float(), dy.float()
        ref = yf * (dyf - (yf * dyf).sum(-1, keepdim=True))
    torch.cuda.synchronize()
    print(f"{' '.join(sys.argv[1:])}: ok, max diff {(out.float() - ref).abs().max().item():.3g}")
except Exception as e:  # noqa: BLE001
    print(f"{' '.join(sys.argv[1:])}: {type(e).__name__}: {str(e).splitlines()[0]}")
