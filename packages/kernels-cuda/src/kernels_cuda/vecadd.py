"""c = a + b elementwise: the hello-CUDA warm-up (cuda/00_vector_add.cu).

    vector_add(a, b, out=None)

a, b: CuPy arrays or torch CUDA tensors of one kind, shape and dtype (float32 / float16 /
bfloat16), any strides; the result has their type, shape and dtype.
"""

from __future__ import annotations

import math

from kernels_cuda import arrays, codegen
from kernels_cuda.codegen import Spec

BLOCK = 256
MAX_GRID = 2**31 - 1


def spec(dtype: str) -> Spec:
    return Spec("00_vector_add.cu", "vector_add", dtype)


@codegen.register_specializations
def specializations() -> list[Spec]:
    return [spec(dtype) for dtype in arrays.SUPPORTED_DTYPES]


def vector_add(a, b, *, out=None):
    import numpy as np

    fn = "kernels_cuda.vector_add"
    ops = arrays.backend(a, fn)
    if arrays.backend(b, fn) is not ops:
        raise TypeError(f"{fn}: a and b must be the same kind of array ({ops.kind} and {type(b).__module__})")
    dtype = arrays.check_dtype(ops, a, fn)
    if ops.dtype(b) != dtype or tuple(a.shape) != tuple(b.shape):
        raise ValueError(
            f"{fn}: a is {tuple(a.shape)} {dtype}, b is {tuple(b.shape)} {ops.dtype(b)}; "
            "they must match (no broadcasting)"
        )
    device_id = arrays.check_device(ops, a, fn)
    if arrays.check_device(ops, b, fn) != device_id:
        raise ValueError(f"{fn}: a and b are on different devices")
    shape, n = tuple(a.shape), math.prod(a.shape)
    if out is not None and (
        arrays.backend(out, fn) is not ops or tuple(out.shape) != shape or ops.dtype(out) != dtype
    ):
        raise ValueError(f"{fn}: out must be a {ops.kind} array of shape {shape} and dtype {dtype}")
    result = out if out is not None else ops.empty(shape, a)
    if n == 0:
        return result
    flat = [ops.reshape(ops.contiguous(t), (n,)) for t in (a, b)]
    in_place = arrays.is_contiguous(shape, ops.strides(result))  # else a user's strided out=
    c = ops.reshape(result, (n,)) if in_place else ops.empty((n,), a)
    args = (np.uint64(ops.ptr(flat[0])), np.uint64(ops.ptr(flat[1])), np.uint64(ops.ptr(c)), np.int64(n))
    codegen.launch(
        spec(dtype),
        (min(math.ceil(n / BLOCK), MAX_GRID),),
        (BLOCK,),
        args,
        stream=ops.stream(a),
        device_id=device_id,
    )
    if not in_place:
        ops.copy_(result, ops.reshape(c, shape))
    return result
