"""kernels_cuda: CUDA C kernels compiled at run time by NVRTC and launched through CuPy.

    kernels_cuda.softmax(x, dim=-1, variant="auto")   # v1 naive ... v4 long rows, see softmax_variants.py
    kernels_cuda.vector_add(a, b)                      # the hello-CUDA warm-up

Both take CuPy arrays or torch CUDA tensors, zero-copy, and run on the caller's current stream.
The CUDA C sources are in kernels_cuda/cuda/, numbered in reading order; codegen.py compiles them.
"""

from kernels_cuda.softmax_variants import VARIANTS, softmax
from kernels_cuda.vecadd import vector_add

__all__ = ["VARIANTS", "softmax", "vector_add"]
