"""kernels_triton: the Triton softmax (forward and backward, any row length) and the twelve
Triton Puzzles (kernels_triton.puzzles; `python -m kernels_triton.puzzles`)."""

from kernels_triton.configs import SoftmaxConfig
from kernels_triton.softmax import SoftmaxDimError, autotune_picks, softmax, softmax_backward

__all__ = ["SoftmaxConfig", "SoftmaxDimError", "autotune_picks", "softmax", "softmax_backward"]
