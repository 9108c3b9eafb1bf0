// 00 vector add: c = a + b, the hello-CUDA warm-up.
//
// One thread per element and a grid-stride loop, so any length runs on any grid; arithmetic in
// fp32 for every storage type. What it proves is the toolchain: this file goes through NVRTC to a
// cubin for the device's own architecture, CuPy loads it and launches it on the caller's stream,
// and the result matches NumPy. It moves 2- or 4-byte elements with one access each, coalesced
// across the warp; the tuning (16-byte accesses, data held on chip) starts in the softmax kernels.
#include "common.cuh"

extern "C" __global__ void vector_add(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                                      elem_t* __restrict__ c, i64 n) {
  const i64 stride = static_cast<i64>(gridDim.x) * blockDim.x;
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    c[i] = from_f32(to_f32(a[i]) + to_f32(b[i]));
}
