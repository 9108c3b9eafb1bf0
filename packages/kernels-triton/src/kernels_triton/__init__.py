"""kernels_triton: the Triton softmax (forward and backward, any row length) and the twelve
Triton Puzzles (kernels_triton.puzzles; `python -m kernels_triton.puzzles`)."""

import importlib.metadata as _metadata

try:
    __version__ = _metadata.version("kernel-lab-kernels-triton")
except _metadata.PackageNotFoundError:  # imported from a source tree with no installed metadata
    __version__ = "0+unknown"

from kernels_triton import launch as _launch
from kernels_triton.configs import SoftmaxConfig
from kernels_triton.softmax import SoftmaxDimError, autotune_picks, softmax, softmax_, softmax_backward

__all__ = ["SoftmaxConfig", "SoftmaxDimError", "autotune_picks", "softmax", "softmax_", "softmax_backward"]

_launch.warm_up_in_background()
