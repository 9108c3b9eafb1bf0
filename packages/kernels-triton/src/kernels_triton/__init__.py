"""kernels_triton: the Triton softmax (forward and backward, autotuned, any row length) and
the twelve Triton Puzzles (kernels_triton.puzzles; `python -m kernels_triton.puzzles`)."""

from kernels_triton.softmax import SoftmaxConfig, SoftmaxDimError, autotune_picks, softmax, softmax_backward

__all__ = ["SoftmaxConfig", "SoftmaxDimError", "autotune_picks", "softmax", "softmax_backward"]
