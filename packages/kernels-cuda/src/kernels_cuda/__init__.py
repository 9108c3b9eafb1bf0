"""kernels_cuda: CUDA C kernels compiled at run time by NVRTC and launched through the CUDA driver.

    kernels_cuda.softmax(x, dim=-1, variant="auto")   # v1 naive ... v4 long rows: softmax_variants.py
    kernels_cuda.vector_add(a, b)                      # the hello-CUDA warm-up: vecadd.py
    kernels_cuda.softmax_backward(y, dy, dim=-1)       # dx = y * (dy - sum(y * dy)): backward_call.py

They take CuPy arrays or torch CUDA tensors, zero-copy, and run on the tensor's device, on the
caller's current stream there. softmax is batch-invariant by default (row i's bits never depend
on the other rows) and a torch op (softmax_op.py): autograd, torch.compile and torch.export.
The CUDA C sources are in kernels_cuda/cuda/, numbered in reading order; codegen.py compiles them
(`python -m kernels_cuda.codegen --offline --arch sm_80 sm_90` prints every kernel's resources).

Issue 45's ops, for torch CUDA tensors (torch ops too: autograd, torch.compile), from the
row-per-block kernels 09 and 10 (row_kernels.py):
    kernels_cuda.log_softmax(x, dim=-1)                       # F.log_softmax: log_softmax_op.py
    kernels_cuda.cross_entropy(logits, target, ...)           # loss and gradient in one read: cross_entropy_op.py
    kernels_cuda.token_logprobs_and_entropy(logits, target)   # log p(target), entropy: cross_entropy_op.py
"""

import importlib.metadata as _metadata

try:
    __version__ = _metadata.version("kernel-lab-kernels-cuda")
except _metadata.PackageNotFoundError:  # imported from a source tree with no installed metadata
    __version__ = "0+unknown"

__all__ = [
    "KERNEL_MODULES",
    "VARIANTS",
    "cross_entropy",
    "import_kernel_modules",
    "log_softmax",
    "softmax",
    "softmax_backward",
    "token_logprobs_and_entropy",
    "vector_add",
]

# The modules that launch kernels; each registers its specializations with the codegen core
# (codegen.register_specializations) when imported, so the offline compile covers them.
KERNEL_MODULES = ("kernels_cuda.vecadd", "kernels_cuda.softmax_plans", "kernels_cuda.backward_plans")

# 09 and 10, the kernels of log_softmax_op.py and cross_entropy_op.py (listed without importing torch)
KERNEL_MODULES += ("kernels_cuda.row_kernels",)


def import_kernel_modules() -> None:
    import importlib

    for module in KERNEL_MODULES:
        importlib.import_module(module)


def __getattr__(name: str):
    # Imported on first use: `import kernels_cuda` stays cheap and needs no GPU library. No module
    # of this package is named like a function it exports: importing a submodule sets the package
    # attribute of its name, which would then shadow the function.
    if name in ("softmax", "VARIANTS"):
        from kernels_cuda import softmax_variants

        return getattr(softmax_variants, name)
    if name == "softmax_backward":
        from kernels_cuda.backward_call import softmax_backward

        return softmax_backward
    if name == "vector_add":
        from kernels_cuda.vecadd import vector_add

        return vector_add
    if name == "log_softmax":
        from kernels_cuda.log_softmax_op import log_softmax

        return log_softmax
    if name in ("cross_entropy", "token_logprobs_and_entropy"):
        from kernels_cuda import cross_entropy_op

        return getattr(cross_entropy_op, name)
    raise AttributeError(f"module 'kernels_cuda' has no attribute {name!r}")
