"""labtools: kernel-lab's shared bench harness, op models, roofline and lab CLI.

labtools imports no kernel package: kernels register themselves (see
`labtools.registry`), and every timing goes through `labtools.bench`.
"""

import importlib.metadata as _metadata

try:
    __version__ = _metadata.version("kernel-lab-labtools")
except _metadata.PackageNotFoundError:  # imported from a source tree with no installed metadata
    __version__ = "0+unknown"

from labtools.ops import OPS, Op, get_op, tolerance
from labtools.registry import Implementation, implementations, register

__all__ = ["OPS", "Op", "get_op", "tolerance", "Implementation", "implementations", "register"]
