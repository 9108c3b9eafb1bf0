# A probe: not part of any package.
"""QuACK's softmax forward for rows of N, compiled without a GPU (its cubin and PTX kept):

    CUTE_DSL_ARCH=sm_90a CUTE_DSL_KEEP=ptx,cubin CUTE_DSL_DUMP_DIR=OUT \
    PYTHONPATH=SITE:SITE/nvidia_cutlass_dsl/dsl_packages python compile_quack.py 8192 bf16"""

import sys

import cutlass
from quack.softmax import Softmax

N = int(sys.argv[1])
dtype = {"bf16": cutlass.BFloat16, "f32": cutlass.Float32}[sys.argv[2]]
Softmax.compile(dtype, dtype, N)
print("compiled", N, sys.argv[2])
