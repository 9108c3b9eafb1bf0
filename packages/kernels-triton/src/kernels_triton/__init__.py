"""kernels_triton: the Triton softmax (forward and backward, any row length), log_softmax, the
fused cross-entropy and per-token log-probability / entropy, and the twelve Triton Puzzles (kernels_triton.puzzles; `python -m kernels_triton.puzzles`)."""

import importlib.metadata as _metadata

try:
    __version__ = _metadata.version("kernel-lab-kernels-triton")
except _metadata.PackageNotFoundError:  # imported from a source tree with no installed metadata
    __version__ = "0+unknown"

from kernels_triton.configs import SoftmaxConfig
from kernels_triton.cross_entropy import cross_entropy
from kernels_triton.log_softmax import log_softmax, log_softmax_backward
from kernels_triton.softmax import SoftmaxDimError, autotune_picks, softmax, softmax_, softmax_backward
from kernels_triton.token_logprobs import token_logprobs_and_entropy

__all__ = ["SoftmaxConfig", "SoftmaxDimError", "autotune_picks", "cross_entropy", "log_softmax", "log_softmax_backward",
           "softmax", "softmax_", "softmax_backward", "token_logprobs_and_entropy"]  # fmt: skip
